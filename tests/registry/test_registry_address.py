"""The address policy: loopback, private and metadata addresses refused; allow_private lets the first two in."""

from __future__ import annotations

import socket

import anyio
import pytest

from scanner.registry import address, refuse_reason


def reason(url: str, allow_private: bool = False) -> str | None:
    return anyio.run(lambda: refuse_reason(url, allow_private=allow_private))


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("http://127.0.0.1:8080/mcp", "loopback"),
        ("http://localhost/mcp", "loopback"),
        ("http://[::1]/mcp", "loopback"),
        ("http://10.1.2.3/mcp", "private"),
        ("http://172.16.0.1/mcp", "private"),
        ("https://192.168.1.10/mcp", "private"),
        ("http://[fd12:3456::1]/mcp", "private"),
        ("http://169.254.10.1/mcp", "link-local"),
        ("http://[fe80::1]/mcp", "link-local"),
        ("http://100.64.0.7/mcp", "shared (CGNAT)"),
        ("http://0.0.0.0/mcp", "unspecified"),
        ("http://224.0.0.1/mcp", "multicast"),
        ("http://[::ffff:127.0.0.1]/mcp", "loopback"),
    ],
)
def test_non_public_addresses_refused_unless_allowed(url, label):
    refused = reason(url)
    assert refused is not None
    assert f"is a {label} address" in refused
    assert "--allow-private" in refused
    assert reason(url, allow_private=True) is None


def test_a_localhost_name_is_resolved_not_assumed(monkeypatch):
    """Issue 17 (low): ``*.localhost`` was taken for 127.0.0.1 without resolving, so with --allow-private a scan
    reached the metadata address a resolver gave for it."""
    import ipaddress

    async def metadata(host, port, timeout_s):
        return [ipaddress.ip_address("169.254.169.254")]

    monkeypatch.setattr(address, "_resolve", metadata)
    for url in ("http://evil.localhost/mcp", "http://localhost/mcp"):
        refused = reason(url, allow_private=True)
        assert refused is not None and "cloud metadata" in refused, url


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://100.100.100.200/",
        "http://[::ffff:169.254.169.254]/",
    ],
)
def test_metadata_refused_even_with_allow_private(url):
    for allow in (False, True):
        refused = reason(url, allow)
        assert refused is not None and "metadata" in refused


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "javascript:alert(1)"])
def test_other_schemes_refused(url):
    assert "is not http or https" in (reason(url, True) or "")


def test_public_literal_allowed():
    assert reason("https://8.8.8.8/mcp") is None
    assert reason("https://[2606:4700:4700::1111]/mcp") is None


def fake_dns(monkeypatch, answers):
    """Answer getaddrinfo from a table, so no test depends on real DNS."""

    async def getaddrinfo(host, port, **kwargs):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answers[host]
        ]

    monkeypatch.setattr(address.anyio, "getaddrinfo", getaddrinfo)


def test_names_are_resolved_and_every_address_checked(monkeypatch):
    fake_dns(monkeypatch, {"public.test": ["93.184.216.34"], "mixed.test": ["93.184.216.34", "10.0.0.5"]})
    assert reason("https://public.test/mcp") is None
    refused = reason("https://mixed.test/mcp")
    assert refused == "mixed.test (10.0.0.5) is a private address; --allow-private permits it"
    assert reason("https://mixed.test/mcp", allow_private=True) is None
    assert "does not resolve" in (reason("https://nowhere.test/mcp", True) or "")


def test_no_host():
    assert reason("http:///mcp") == "URL has no host"
