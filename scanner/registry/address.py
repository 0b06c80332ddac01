"""The address policy: which URLs a scan may connect to.

A registry is written by strangers, so a "remote" can point at this machine (``http://127.0.0.1:2375`` is a
Docker daemon), at the local network, or at a cloud metadata service that hands out credentials. Before
connecting, :func:`check_url` resolves the host and refuses, unless ``allow_private``: loopback, private
(RFC 1918, IPv6 ULA), link-local, site-local (``fec0::/10``), shared/CGNAT (100.64/10), unspecified,
multicast, reserved and any other non-global address, judged by the IPv4 address a mapped, NAT64 or 6to4
(``2002::/16``) address reaches. Cloud metadata endpoints (169.254.169.254, fd00:ec2::254, 100.100.100.200,
192.0.0.192, metadata.google.internal, ...) are refused *even with* ``allow_private``, also when embedded in
an IPv6 address (mapped, 6to4, Teredo, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``): no scan needs them and
reaching one by mistake leaks cloud credentials. Schemes other than http and https are always refused.

Every address the name resolves to must pass (a name with one public and one private address is refused). A
name that does not resolve (within the timeout) is not connected to either: the check fails closed, and
:func:`check_url` says ``connect_error`` with the cause, as connecting would have.

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
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from scanner.models import Outcome

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


_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local-use: any RFC 6052 prefix length inside


def _rfc6052(address: ipaddress.IPv6Address, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address embedded after a ``prefix``-bit NAT64 prefix (RFC 6052 section 2.2: bits 64-71 skipped)."""
    number = int(address)
    if prefix == 96:
        return ipaddress.IPv4Address(number & 0xFFFFFFFF)
    stream = ((number >> 64) << 56) | (number & ((1 << 56) - 1))  # 120 bits: the u-octet taken out
    return ipaddress.IPv4Address((stream >> (120 - prefix - 32)) & 0xFFFFFFFF)


def _reaches(address: IPAddress) -> IPAddress:
    """What a connection to ``address`` reaches: the IPv4 address inside an IPv4-mapped (``::ffff:a.b.c.d``),
    NAT64 (``64:ff9b::/96``) or 6to4 (``2002::/16``) address; else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64_WELL_KNOWN:
            return _rfc6052(address, 96)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def _embedded(address: IPAddress) -> list[IPAddress]:
    """Every IPv4 address an IPv6 address may carry to a translator: mapped, 6to4, both Teredo addresses, and
    NAT64 in the well-known prefix and in every prefix length of the local-use range."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found: list[IPAddress] = [_reaches(address)]
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in _NAT64_LOCAL:
        found.extend(_rfc6052(address, prefix) for prefix in (48, 56, 64, 96))
    return found


def classify(address: IPAddress) -> str | None:
    """Why an address is not a public one (``loopback``, ``private``, ...), or None if it is global.

    ``cloud metadata`` when the address, or any IPv4 address embedded in it (:func:`_embedded`), is a metadata
    endpoint; otherwise the address a connection reaches (:func:`_reaches`) is classified.
    """
    if any(candidate in METADATA_ADDRESSES for candidate in (address, *_embedded(address))):
        return "cloud metadata"
    inner = _reaches(address)
    checks = (
        ("unspecified", inner.is_unspecified),
        ("loopback", inner.is_loopback),
        ("link-local", inner.is_link_local),
        ("site-local", isinstance(inner, ipaddress.IPv6Address) and inner.is_site_local),
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


@dataclass(frozen=True)
class Verdict:
    """Why a URL is not connected to: ``refused`` by the policy, or a ``connect_error`` (its host does not
    resolve), with the one-line detail."""

    outcome: Outcome
    detail: str


async def _resolve(host: str, port: int, timeout_s: float) -> list[IPAddress]:
    with anyio.fail_after(timeout_s):
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        text = str(info[4][0]).split("%", 1)[0]  # drop an IPv6 zone id
        found.append(ipaddress.ip_address(text))
    return found


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be connected to whatever it resolves to (unparseable, not http(s), no host), or None.

    ``urlsplit`` accepts ``http://[::1/mcp`` and raises only when ``.hostname`` or ``.port`` is read; this reads
    both, so a caller that passed this check can read them too.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port, parts.hostname
    except ValueError as exc:
        return f"unusable URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return f"scheme {parts.scheme or '(none)'!r} is not http or https"
    if not parts.hostname:
        return "URL has no host"
    return None


async def check_url(url: str, *, allow_private: bool, timeout_s: float = RESOLVE_TIMEOUT_S) -> Verdict | None:
    """Why a scan must not connect to ``url`` (a :class:`Verdict`), or None if it may.

    Resolves the host (with a timeout) and checks every address; see the module docstring for the policy and
    its DNS-rebinding caveat. A host that does not resolve is not connected to either, recorded as
    ``connect_error`` with the cause (what connecting would have said), not as a policy refusal.
    """
    problem = url_problem(url)
    if problem is not None:
        return Verdict(Outcome.REFUSED, problem)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return Verdict(Outcome.REFUSED, "URL has no host")
    if host in METADATA_HOSTS:
        return Verdict(Outcome.REFUSED, f"{host} is a cloud metadata host")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        # Every name is resolved, "localhost" and "*.localhost" too: the connection resolves them the same way
        # (/etc/hosts, a resolver), so assuming 127.0.0.1 would check another address than the one reached.
        try:
            addresses = await _resolve(host, port, timeout_s)
        except TimeoutError:
            return Verdict(Outcome.CONNECT_ERROR, f"dns: {host} did not resolve within {timeout_s:g} s")
        except (OSError, ValueError, UnicodeError) as exc:
            return Verdict(Outcome.CONNECT_ERROR, f"dns: {host} does not resolve ({exc})")
        if not addresses:
            return Verdict(Outcome.CONNECT_ERROR, f"dns: {host} resolves to no address")
    for address in addresses:
        label = classify(address)
        if label is None:
            continue
        if label == "cloud metadata" or not allow_private:
            where = str(address) if str(address) == host else f"{host} ({address})"
            suffix = "" if label == "cloud metadata" else "; --allow-private permits it"
            return Verdict(Outcome.REFUSED, f"{where} is a {label} address{suffix}")
    return None


def offline_refusal(url: str, *, allow_private: bool) -> str | None:
    """What :func:`check_url` will refuse without resolving anything, for a dry run that makes no connection:
    an unusable URL, a metadata host, a literal address the policy refuses, and ``localhost``/``*.localhost``
    (loopback by RFC 6761). A name that needs DNS is left to the scan (None)."""
    problem = url_problem(url)
    if problem is not None:
        return problem
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host in METADATA_HOSTS:
        return f"{host} is a cloud metadata host"
    if host == "localhost" or host.endswith(".localhost"):
        label: str | None = "loopback"
    else:
        try:
            label = classify(ipaddress.ip_address(host.split("%", 1)[0]))
        except ValueError:
            return None
    if label is None or (label != "cloud metadata" and allow_private):
        return None
    suffix = "" if label == "cloud metadata" else "; --allow-private permits it"
    return f"{host} is a {label} address{suffix}"


async def refuse_reason(url: str, *, allow_private: bool, timeout_s: float = RESOLVE_TIMEOUT_S) -> str | None:
    """The detail of :func:`check_url`'s verdict (why ``url`` is not connected to), or None if it may be."""
    verdict = await check_url(url, allow_private=allow_private, timeout_s=timeout_s)
    return None if verdict is None else verdict.detail
