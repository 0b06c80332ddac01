"""An auth-protected server: parse its ``WWW-Authenticate`` challenge and fetch its RFC 9728 metadata.

A scanner holds no user's tokens, so a 401 (or a 403 ``insufficient_scope`` step-up) is recorded as an
auth_required outcome with what a person needs to connect: the challenge parameters (``resource_metadata``,
``scope``, ``error``) and the protected-resource metadata (``authorization_servers``, ``scopes_supported``...).

The metadata is fetched only from the server's own origin (the ``resource_metadata`` URL, else the well-known
paths): following a server-chosen URL to any host would let a registry entry point the scanner at arbitrary
hosts. A URL on another origin is recorded, not fetched. No request header of the entry is sent with it. The
metadata body is read through :mod:`scanner.mcp.body` (capped after content-decoding) and parsed by
:mod:`scanner.wire`; challenge values pass through ``wire.clean_str``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from scanner import wire
from scanner.mcp.body import BodyError, iter_decoded
from scanner.mcp.failures import ScanFailure
from scanner.models import Outcome

if TYPE_CHECKING:
    from scanner.mcp.limits import ClientLimits
    from scanner.mcp.transports.httpclient import HttpClient, Response

METADATA_BYTES = 256 * 1024
_PARAM = re.compile(r'([A-Za-z0-9_!#$%&\'*+.^`|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def parse_challenge(header: str) -> dict[str, Any]:
    """``Bearer realm="x", scope="a b"`` → ``{"scheme": "Bearer", "params": {"realm": "x", "scope": "a b"}}``.

    Only the first challenge's scheme is named; parameters of every challenge are collected (first wins).
    """
    header = header[:8192]
    scheme_match = re.match(r"\s*([A-Za-z0-9_.~+/-]+)", header)
    scheme = scheme_match.group(1) if scheme_match else ""
    params: dict[str, str] = {}
    rest = header[scheme_match.end() :] if scheme_match else header
    for key, raw in _PARAM.findall(rest):
        value = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\") if raw.startswith('"') else raw
        params.setdefault(wire.clean_str(key.lower()), wire.clean_str(value))
    return {"scheme": wire.clean_str(scheme), "params": params}


def same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.hostname, pa.port) == (pb.scheme, pb.hostname, pb.port)


def well_known_urls(url: str) -> list[str]:
    """RFC 9728's well-known locations for ``url``: the path-inserted one first, then the origin's root."""
    path = urlsplit(url).path.rstrip("/")
    found = [urljoin(url, _WELL_KNOWN + path)] if path else []
    return [*found, urljoin(url, _WELL_KNOWN)]


async def auth_required(client: HttpClient, url: str, response: Response, limits: ClientLimits) -> ScanFailure:
    """The auth_required failure for ``response`` (a 401 or 403), metadata fetched where allowed."""
    status = response.status_code
    header = response.headers.get("www-authenticate", "")
    extra: dict[str, Any] = {"status": status}
    if header:
        extra["challenge"] = parse_challenge(header)
    params = extra.get("challenge", {}).get("params", {})
    metadata_url = params.get("resource_metadata")
    candidates: list[str] = []
    if metadata_url:
        metadata_url = urljoin(url, metadata_url)
        extra["resource_metadata_url"] = metadata_url
        if same_origin(metadata_url, url):
            candidates.append(metadata_url)
        else:
            extra["resource_metadata_error"] = "not fetched: on another origin than the server"
    else:
        candidates.extend(well_known_urls(url))
    for candidate in candidates:
        metadata, error = await fetch_metadata(client, candidate, limits)
        if metadata is not None:
            extra["resource_metadata"] = metadata
            extra["resource_metadata_url"] = candidate
            extra.pop("resource_metadata_error", None)
            break
        extra["resource_metadata_error"] = error
    what = "insufficient scope (step-up)" if status == 403 else "authorization required"
    return ScanFailure(Outcome.AUTH_REQUIRED, f"HTTP {status}: {what}", extra)


async def fetch_metadata(
    client: HttpClient | httpx.AsyncClient, url: str, limits: ClientLimits
) -> tuple[dict[str, Any] | None, str]:
    """GET protected-resource metadata: (the JSON object, "") or (None, why not). Never raises."""
    body = bytearray()
    status = 0
    with anyio.move_on_after(limits.connect_timeout) as scope:
        try:
            async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
                status = response.status_code
                if status == 200:
                    coding = response.headers.get("content-encoding", "")
                    async for piece in iter_decoded(response.aiter_raw(), coding, METADATA_BYTES, "metadata"):
                        body += piece
        except BodyError as exc:
            return None, exc.message
        except httpx.HTTPError as exc:
            return None, f"metadata fetch failed: {type(exc).__name__}"
    if scope.cancelled_caught:
        return None, "metadata fetch timed out"
    if status != 200:
        return None, f"metadata fetch: HTTP {status}"
    try:
        metadata = wire.loads(bytes(body))
    except (ValueError, RecursionError):
        return None, "metadata is not JSON"
    if not isinstance(metadata, dict):
        return None, "metadata is not a JSON object"
    return metadata, ""
