"""The address policy: which URLs a scan may connect to.

A registry is written by strangers, so a "remote" can point at this machine (``http://127.0.0.1:2375`` is a
Docker daemon), at the local network, or at a cloud metadata service that hands out credentials. Before
connecting, :func:`refuse_reason` resolves the host and refuses, unless ``allow_private``: loopback, private
(RFC 1918, IPv6 ULA), link-local, shared/CGNAT (100.64/10), unspecified, multicast, reserved and any other
non-global address. Cloud metadata endpoints (169.254.169.254, fd00:ec2::254, 100.100.100.200,
192.0.0.192, metadata.google.internal, ...) are refused *even with* ``allow_private``: no scan needs them and
reaching one by mistake leaks cloud credentials. Schemes other than http and https are always refused.

Every address the name resolves to must pass (a name with one public and one private address is refused). A
name that does not resolve within the timeout is refused too: the check fails closed.

DNS-rebinding caveat: this check resolves the name, and the HTTP client resolves it again when it connects. A
hostile DNS server can answer a public address now and ``127.0.0.1`` a second later (TTL 0). Closing that gap
needs the connection pinned to the checked address (connect to the IP, send the original Host header and TLS
SNI); until the transport does that, treat the policy as protection against registry mistakes and casual abuse,
not against a determined attacker who controls a domain's DNS. Redirects must be checked again for the same
reason.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import anyio

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",
        "169.254.170.2",
        "fd00:ec2::254",
        "100.100.100.200",
        "192.0.0.192",
        "169.254.169.123",
    )
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
RESOLVE_TIMEOUT_S = 5.0


def _unwrap(address: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped (``::ffff:a.b.c.d``) or NAT64 (``64:ff9b::/96``) IPv6 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in ipaddress.ip_network("64:ff9b::/96"):
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def classify(address: IPAddress) -> str | None:
    """Why an address is not a public one (``loopback``, ``private``, ...), or None if it is global."""
    inner = _unwrap(address)
    for candidate in {address, inner}:
        if candidate in METADATA_ADDRESSES:
            return "cloud metadata"
    checks = (
        ("unspecified", inner.is_unspecified),
        ("loopback", inner.is_loopback),
        ("link-local", inner.is_link_local),
        ("multicast", inner.is_multicast),
        ("shared (CGNAT)", isinstance(inner, ipaddress.IPv4Address) and inner in _CGNAT),
        ("private", inner.is_private),
        ("reserved", inner.is_reserved),
    )
    for label, hit in checks:
        if hit:
            return label
    if not inner.is_global:
        return "non-global"
    return None


async def _resolve(host: str, port: int, timeout_s: float) -> list[IPAddress]:
    with anyio.fail_after(timeout_s):
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        text = str(info[4][0]).split("%", 1)[0]  # drop an IPv6 zone id
        found.append(ipaddress.ip_address(text))
    return found


async def refuse_reason(url: str, *, allow_private: bool, timeout_s: float = RESOLVE_TIMEOUT_S) -> str | None:
    """Why a scan must not connect to ``url``, or None if it may.

    Resolves the host (with a timeout) and checks every address; see the module docstring for the policy and
    its DNS-rebinding caveat.
    """
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"unusable URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return f"scheme {parts.scheme or '(none)'!r} is not http or https"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "URL has no host"
    if host in METADATA_HOSTS:
        return f"{host} is a cloud metadata host"
    try:
        literal: IPAddress | None = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    elif host == "localhost" or host.endswith(".localhost"):
        addresses = [ipaddress.ip_address("127.0.0.1")]  # RFC 6761: never ask DNS about localhost
    else:
        try:
            addresses = await _resolve(host, port, timeout_s)
        except TimeoutError:
            return f"{host} did not resolve within {timeout_s:g} s"
        except (OSError, ValueError) as exc:
            return f"{host} does not resolve ({exc})"
        if not addresses:
            return f"{host} resolves to no address"
    for address in addresses:
        label = classify(address)
        if label is None:
            continue
        if label == "cloud metadata" or not allow_private:
            where = str(address) if str(address) == host else f"{host} ({address})"
            suffix = "" if label == "cloud metadata" else "; --allow-private permits it"
            return f"{where} is a {label} address{suffix}"
    return None
