"""What the two HTTP transports share: one client per server, same-origin redirects, capped reads, error mapping.

The client is :class:`scanner.mcp.transports.httpclient.HttpClient` (httpx's behaviour on connections of its
own). This is the boundary where httpx errors become :class:`scanner.mcp.failures.ScanFailure` (``raise
... from exc``). Redirects are followed by hand, at most ``max_redirects``, only within the URL's origin (or from
http to https on the same host): the request may carry secret headers, and a cross-origin hop would hand them to
another host. Every body is read as a raw stream and decoded by :mod:`scanner.mcp.body` a piece at a time,
counted after decoding (so a gzip bomb, stacked codings included, counts at its real size before it is held);
nothing is read unbounded. Text and JSON in bodies go through :mod:`scanner.wire`.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import html
import math
import re
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from scanner import wire
from scanner.mcp import auth, census
from scanner.mcp.body import ACCEPT_ENCODING, BodyError, iter_decoded
from scanner.mcp.failures import HttpStatusFailure, ScanFailure
from scanner.mcp.limits import ClientLimits
from scanner.mcp.transports.httpclient import HttpClient, Request, Response
from scanner.models import Outcome

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
ERROR_BODY_BYTES = 64 * 1024
REASON_CHARS = 200
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


def make_client(limits: ClientLimits) -> HttpClient:
    """A client with the scan's timeouts; proxies from the environment are ignored, so a scan goes where its URL
    says and loopback tests do not depend on the shell; redirects are followed by :func:`send`, not the client."""
    return HttpClient(
        timeout=httpx.Timeout(limits.timeout, connect=limits.connect_timeout),
        ssl_context=_ssl_context(),
        default_headers={"Accept-Encoding": ACCEPT_ENCODING},  # only the codings scanner.mcp.body decodes
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every scan: building one (loading the CA bundle) costs ~20 ms each."""
    return httpx.create_ssl_context()


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return (parts.scheme, (parts.hostname or "").lower(), port)


def redirect_allowed(start: tuple[str, str, int | None], target: tuple[str, str, int | None]) -> bool:
    """Same origin, or the same host moving from http to https (a common upgrade that only adds safety)."""
    if start == target:
        return True
    return start[1] == target[1] and (start[0], target[0], target[2]) == ("http", "https", 443)


@asynccontextmanager
async def send(
    client: HttpClient,
    method: str,
    url: str,
    limits: ClientLimits,
    *,
    headers: Mapping[str, str],
    content: bytes | None = None,
) -> AsyncIterator[Response]:
    """Send a request (following same-origin redirects) and yield the streaming response, headers read.

    401, and 403 with ``insufficient_scope``, end as auth_required with the challenge and its metadata.
    """
    start_origin = origin(url)
    hops = 0
    while True:
        try:
            request = client.build_request(method, url, headers=headers, content=content)
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError included; its text could quote a secret
            raise ScanFailure(
                Outcome.CONNECT_ERROR, "request cannot be built: a header or the URL is not valid HTTP"
            ) from exc
        response = await _send(client, request)
        try:
            if response.status_code in _REDIRECTS and "location" in response.headers:
                hops += 1
                target = urljoin(url, response.headers["location"])
                if not redirect_allowed(start_origin, origin(target)):
                    raise ScanFailure(
                        Outcome.HTTP_ERROR,
                        f"HTTP {response.status_code} redirect to another origin refused",
                        {"status": response.status_code, "redirect_origin": "{}://{}:{}".format(*origin(target))},
                    )
                if hops > limits.max_redirects:
                    raise ScanFailure(
                        Outcome.HTTP_ERROR,
                        f"more than {limits.max_redirects} redirects",
                        {"status": response.status_code, "redirects": hops},
                    )
                url = target
                continue
            if response.status_code == 401 or (
                response.status_code == 403 and "insufficient_scope" in response.headers.get("www-authenticate", "")
            ):
                reason = body_reason(await _error_body(response, limits), content_type(response))
                failure = await auth.auth_required(client, url, response, limits)
                if reason:
                    failure.detail = f"{failure.detail} ({reason})"
                    failure.extra["reason"] = reason
                raise failure
            yield response
            return
        finally:
            await response.aclose()


async def _send(client: HttpClient, request: Request) -> Response:
    try:
        return await client.send(request)
    except httpx.TimeoutException as exc:
        raise ScanFailure(Outcome.TIMEOUT, f"HTTP {type(exc).__name__}") from exc
    except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ScanFailure(Outcome.CONNECT_ERROR, f"cannot connect: {_reason(exc)}") from exc
    except httpx.LocalProtocolError as exc:  # an invalid header value: its text may quote a secret
        raise ScanFailure(Outcome.CONNECT_ERROR, "request cannot be sent: a header is not valid HTTP") from exc
    except httpx.RemoteProtocolError as exc:
        raise ScanFailure(Outcome.INVALID_RESPONSE, f"not valid HTTP: {_reason(exc)}") from exc
    except httpx.HTTPError as exc:
        raise ScanFailure(Outcome.CONNECT_ERROR, f"HTTP transport error: {_reason(exc)}") from exc


def _reason(exc: Exception) -> str:
    return (str(exc) or type(exc).__name__)[:200]


async def iter_capped(response: Response, cap: float, what: str = "answer") -> AsyncIterator[bytes]:
    """The body's decoded bytes, piece by piece; over ``cap`` decoded bytes in total ends the scan as too_large.

    ``cap`` may be ``math.inf`` for a long-lived event stream whose caller caps each event instead.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap and "content-encoding" not in response.headers:
        raise ScanFailure(Outcome.TOO_LARGE, f"{what} declares {declared} bytes, over {cap}", {"limit_bytes": cap})
    coding = response.headers.get("content-encoding", "")
    try:
        async for piece in iter_decoded(response.aiter_raw(), coding, cap, what):
            yield piece
    except BodyError as exc:
        if exc.kind == "too_large":
            raise ScanFailure(Outcome.TOO_LARGE, exc.message, {"limit_bytes": cap}) from exc
        raise ScanFailure(Outcome.INVALID_RESPONSE, exc.message, {"content_encoding": coding[:100]}) from exc
    except httpx.TimeoutException as exc:
        raise ScanFailure(Outcome.TIMEOUT, f"reading the {what} timed out") from exc
    except httpx.HTTPError as exc:
        raise ScanFailure(Outcome.CONNECT_ERROR, f"reading the {what} failed: {_reason(exc)}") from exc


def iter_stream(response: Response, what: str) -> AsyncIterator[bytes]:
    """A long-lived stream's decoded pieces (each at most 64 KiB) with no total cap: the caller caps each event."""
    return iter_capped(response, math.inf, what)


async def read_prefix(response: Response, size: int) -> bytes:
    """At most the first ``size`` decoded bytes of a body (a snippet for a person); a fault just ends it early."""
    body = bytearray()
    with contextlib.suppress(ScanFailure):
        async for piece in iter_capped(response, ERROR_BODY_BYTES, "body"):
            body += piece
            if len(body) >= size:
                break
    return bytes(body[:size])


async def read_capped(response: Response, cap: int, what: str = "answer") -> bytes:
    body = bytearray()
    async for chunk in iter_capped(response, cap, what):
        body += chunk
    return bytes(body)


async def _error_body(response: Response, limits: ClientLimits) -> bytes:
    """Up to 64 KiB of an error answer's body, read for at most ``connect_timeout``; an unreadable or endless
    body is an empty one (the status says enough, and a dripping 401 must still end as auth_required)."""
    with anyio.move_on_after(limits.connect_timeout), contextlib.suppress(ScanFailure):
        return await read_capped(response, ERROR_BODY_BYTES, "error body")
    return b""


async def status_failure(response: Response, limits: ClientLimits) -> HttpStatusFailure:
    """An unusable status, with up to 64 KiB of its body kept (a modern error may be in it).

    402 ends as ``payment_required`` (with the x402 offer's summary in ``extra["x402"]``), 429 as
    ``rate_limited`` (the crawl retries it first), any other status as ``http_error`` (:mod:`scanner.mcp.census`).

    The detail quotes the body's reason when there is one (``HTTP 403: Access is only allowed at
    localhost:8931``): a bare status leaves a person guessing what the server wanted.
    """
    body = await _error_body(response, limits)
    kind = content_type(response)
    reason = body_reason(body, kind)
    failure = HttpStatusFailure(
        response.status_code, body, kind, f"HTTP {response.status_code}: {reason}" if reason else ""
    )
    if reason:
        failure.extra["reason"] = reason
    wait = retry_after_seconds(response.headers.get("retry-after"))
    if wait is not None:
        failure.extra["retry_after"] = wait
    failure.outcome = census.status_outcome(response.status_code)
    if failure.outcome is Outcome.PAYMENT_REQUIRED:
        offer = census.x402_summary(body, response.headers.get("payment-required"))
        if offer is not None:
            failure.extra["x402"] = offer
            failure.detail = f"HTTP 402: payment required ({census.x402_text(offer)})"
        elif not reason:
            failure.detail = "HTTP 402: payment required"
    return failure


def retry_after_seconds(value: str | None) -> float | int | None:
    """``Retry-After`` (RFC 9110: delay-seconds or an HTTP-date) as seconds from now, or None if absent or junk.

    The crawl decides whether to wait that long (it caps the wait); this only reads what the server asked for.
    """
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return int(text[:9])
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, round((when - datetime.now(UTC)).total_seconds(), 1))


def body_reason(body: bytes, kind: str) -> str:
    """One line saying why, from an error body: a JSON ``error``/``message``/``detail`` string (or
    ``error.message``), an HTML page's ``<title>``, else the first non-blank line of text; "" if none.

    White space is folded and the line capped at :data:`REASON_CHARS`; it is the server's text, so whoever
    prints it still escapes control characters, and the scan scrubs request header values out of it.
    """
    text = ""
    if kind == "application/json" or kind.endswith("+json") or body[:1] in (b"{", b"["):
        text = _json_reason(body)
    elif kind == "text/html" or body.lstrip()[:1] == b"<":
        match = _TITLE.search(body)
        text = html.unescape(wire.decode_bytes(match.group(1))) if match else ""
    else:
        decoded = wire.decode_bytes(body)
        text = next((line for line in decoded.splitlines() if line.strip()), "")
    return wire.clean_str(" ".join(text.split())[:REASON_CHARS])


def _json_reason(body: bytes) -> str:
    try:
        value = wire.loads(body)
    except (ValueError, RecursionError):
        return ""
    for _ in range(3):  # {"error": {"message": ...}} and the like, never deeper
        if isinstance(value, str):
            return value
        if not isinstance(value, dict):
            return ""
        value = next((value[key] for key in ("error", "message", "detail", "error_description") if key in value), None)
    return value if isinstance(value, str) else ""


def content_type(response: Response) -> str:
    """The media type, lower-cased, for deciding what to read (never shown: see :func:`shown_type`)."""
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


# A media type as a person may be shown it: a registered top-level type (or x-...) and a short subtype.
_MEDIA_TYPE = re.compile(
    r"(?:application|text|image|audio|video|multipart|message|font|model|example|x-[a-z0-9-]{1,20})"
    r"/[a-z0-9!#$&^_.+-]{1,64}",
    re.IGNORECASE,
)
MALFORMED_TYPE = "(not a media type)"


def shown_type(response: Response) -> str:
    """The media type as an outcome's detail and ``extra["content_type"]`` show it: as the server wrote it (not
    lower-cased, so the scrubber recognises a credential echoed there) and only when it has the shape of a
    media type; anything else (a token, a header value echoed back, text) is :data:`MALFORMED_TYPE`, never
    printed or stored. ``""`` when there is none."""
    said = response.headers.get("content-type", "").split(";")[0].strip()
    if not said:
        return ""
    return said if _MEDIA_TYPE.fullmatch(said) else MALFORMED_TYPE
