"""Fuzzing the MCP client's parsers with Hypothesis: random and mutated real payloads, never a traceback.

Targets: JSON-RPC decoding; the SSE event parser under any chunking; the whole session (``server/discover``,
``initialize`` and ``tools/list`` result handling, paging) through :func:`scanner.mcp.scan_server` over a
scripted in-memory transport whose answers are the fuzzed bytes; ``WWW-Authenticate`` parsing; RFC 9728 metadata
and HTTP error bodies read through a real httpx client (``httpx.MockTransport``) with fuzzed content-codings.

Seeds are real payloads: the answers of the recorded quirk servers and the hostile servers, and the tool lists of
the rule fixtures. Each example must: raise nothing but the client's own failure type (where one is raised at
all), finish in bounded time (Hypothesis' deadline) and memory (tracemalloc's peak), and leave only text that
encodes as UTF-8 without NUL, since that is what gets stored and printed.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import time
import tracemalloc
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scanner.mcp import ClientLimits, jsonrpc, scan_server
from scanner.mcp import session as session_module
from scanner.mcp.auth import fetch_metadata, parse_challenge
from scanner.mcp.body import BodyDecoder, BodyError
from scanner.mcp.failures import ScanFailure
from scanner.mcp.sse import SSEParser
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.http import body_reason
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from tests.mcp.real_quirks import TOOLS as QUIRK_TOOLS

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
SECRET = "FuzzSecret+Token/42=="
PEAK_BYTES = 48 * 1024 * 1024  # per example; the inputs are at most a few hundred KB
FUZZ = settings(
    max_examples=150,
    deadline=30_000,  # generous per example (a loaded machine is slow, not wrong); a hang still fails
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIMITS = ClientLimits(timeout=60.0, connect_timeout=1.0, shutdown_grace=0.1, max_pages=5, max_tools=500)


def _fixture_tools() -> list[Any]:
    lists: list[Any] = []
    for path in sorted(FIXTURES.glob("*/positive.json"))[:12]:
        value = json.loads(path.read_text(encoding="utf-8"))
        lists.append(value.get("tools", value) if isinstance(value, dict) else value)
    return lists


TOOL_LISTS = [QUIRK_TOOLS, *_fixture_tools()]
SEED_RESULTS: dict[str, list[Any]] = {
    "initialize": [
        {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "q", "version": "1"}},
        {"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "x"}, "instructions": "Use it."},
    ],
    "server/discover": [
        {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-modern", "version": "2026.1"},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
        }
    ],
    "tools/list": [{"tools": tools} for tools in TOOL_LISTS]
    + [{"tools": TOOL_LISTS[0], "nextCursor": "c1"}, {"tools": [], "nextCursor": ""}],
}
SEED_ERRORS = [
    {"code": -32601, "message": "Method not found"},
    {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2025-11-25"]}},
    {"code": -32021, "message": "Missing capability", "data": {"required": ["x"]}},
]
HOSTILE_TEXT = [
    "\ud800",
    "\x00",
    "a\udfffb",
    "\u202e",
    "x" * 5000,
    SECRET,
    f"Bearer {SECRET}",
    quote(SECRET, safe=""),
    base64.b64encode(SECRET.encode()).decode(),
]
HOSTILE_BYTES = [b"\\ud800", b"\\u0000", b"\xff\xfe", b"\xed\xa0\x80", b"\x00", b'"', b"{", b"]", b"\n", b"\r"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
    | st.sampled_from(HOSTILE_TEXT),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=30,
)


@st.composite
def mutated(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """``value`` with some of its parts replaced, dropped or retyped (a structure-aware mutation)."""
    if depth > 6 or draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            action = draw(st.integers(0, 9))
            if action == 0:
                continue  # dropped
            if action == 1:
                key = draw(st.sampled_from(HOSTILE_TEXT))
            out[key] = draw(mutated(item, depth + 1)) if action < 6 else item
        if draw(st.booleans()):
            out[draw(st.text(max_size=10))] = draw(json_values)
        return out
    if isinstance(value, list):
        items = [draw(mutated(item, depth + 1)) if draw(st.booleans()) else item for item in value[:20]]
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), draw(json_values))
        return items
    return draw(json_values) if draw(st.booleans()) else value


@st.composite
def byte_mutated(draw: st.DrawFn, raw: bytes) -> bytes:
    """``raw`` with a few bytes replaced, inserted or removed (hostile escapes and invalid UTF-8 among them)."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            data[at:at] = draw(st.sampled_from(HOSTILE_BYTES) | st.binary(max_size=4))
        elif choice == 1 and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
    return bytes(data)


def answer_for(method: str, request_id: int) -> st.SearchStrategy[bytes]:
    """What a fuzzed server answers to ``method``: a mutated real answer, random JSON, or mangled bytes."""
    seeds = SEED_RESULTS.get(method, [{}])
    results = st.one_of(st.sampled_from(seeds), st.sampled_from(seeds).flatmap(lambda seed: mutated(seed)))
    responses = st.one_of(
        results.map(lambda result: {"jsonrpc": "2.0", "id": request_id, "result": result}),
        results.map(lambda result: {"jsonrpc": "2.0", "id": request_id, "result": result}),  # twice: weighted
        st.sampled_from(SEED_ERRORS)
        .flatmap(lambda error: mutated(error))
        .map(lambda error: {"jsonrpc": "2.0", "id": request_id, "error": error}),
        json_values,
    )
    encoded = responses.map(lambda message: json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return st.one_of(encoded, encoded, encoded.flatmap(lambda raw: byte_mutated(raw)), st.binary(max_size=200))


class ScriptedTransport(ClientTransport):
    """A transport whose every answer is drawn by Hypothesis, decoded as the real transports decode bytes."""

    name = Transport.STREAMABLE_HTTP.value

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    async def open(self) -> None:
        """Nothing to connect to."""

    async def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        raw = self.data.draw(answer_for(str(message["method"]), int(message["id"])))
        answer = jsonrpc.decode(raw)
        if not jsonrpc.is_response(answer):
            raise ScanFailure(Outcome.INVALID_RESPONSE, "answer is not a JSON-RPC response")
        if not jsonrpc.same_id(answer.get("id"), message["id"]):
            raise ScanFailure(Outcome.PROTOCOL_ERROR, "answer has another id")
        return answer

    async def notify(self, message: Mapping[str, Any]) -> None:
        """Notifications are not answered."""

    async def aclose(self) -> None:
        """Nothing to release."""


def assert_writable(value: Any) -> None:
    """Every string inside (keys too) encodes as UTF-8 and holds no NUL: what SQLite, PostgreSQL and files need."""
    if isinstance(value, str):
        value.encode("utf-8")  # raises on a lone surrogate
        assert "\x00" not in value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            assert_writable(key)
            assert_writable(item)
    elif isinstance(value, list | tuple):
        for item in value:
            assert_writable(item)


@contextmanager
def bounded_memory() -> Iterator[None]:
    """Trace the code under test (not Hypothesis' own work) and check its peak stayed under PEAK_BYTES."""
    tracemalloc.start()
    try:
        yield
        assert tracemalloc.get_traced_memory()[1] < PEAK_BYTES
    finally:
        tracemalloc.stop()


# --- JSON-RPC and SSE --------------------------------------------------------------------------------------


@FUZZ
@given(raw=st.one_of(st.binary(max_size=300), answer_for("tools/list", 1), answer_for("initialize", 1)))
def test_jsonrpc_decode_raises_only_the_clients_failure(raw: bytes) -> None:
    try:
        with bounded_memory():
            value = jsonrpc.decode(raw)
    except ScanFailure as failure:
        assert_writable([failure.detail, failure.extra])
    else:
        assert_writable(value)
        if isinstance(value, dict):
            error = jsonrpc.error_of(value)
            assert_writable(error)
            jsonrpc.is_modern_error(error)


def sse_stream(message: bytes) -> bytes:
    return b"id: 0\ndata:\n\n: keep-alive\r\n\r\nevent: message\r\ndata: " + message + b"\n\ndata: x\r\r\n"


@FUZZ
@given(
    stream=st.one_of(
        st.binary(max_size=500),
        answer_for("tools/list", 1).map(sse_stream).flatmap(lambda raw: byte_mutated(raw)),
        st.lists(st.sampled_from([b"data: a", b"event: e", b"id: \xff", b":c", b"\r", b"\n", b"\r\n", b"\x00"])).map(
            b"".join
        ),
    ),
    cuts=st.lists(st.integers(0, 600), max_size=8),
)
def test_sse_parser_takes_any_bytes_in_any_chunks(stream: bytes, cuts: list[int]) -> None:
    points = sorted({0, len(stream), *(cut for cut in cuts if cut <= len(stream))})
    parser = SSEParser()
    events = []
    with bounded_memory():
        for start, end in itertools.pairwise(points):
            events.extend(parser.feed(stream[start:end]))
        whole = SSEParser().feed(stream)
    assert [(e.event, e.data, e.id) for e in events] == [(e.event, e.data, e.id) for e in whole]
    assert_writable([(e.event, e.data, e.id) for e in events])


def test_sse_parser_is_linear_in_many_short_lines() -> None:
    # 256 Ki one-byte lines in 64 KiB chunks: the old parser re-scanned the rest of the buffer per line
    # (quadratic: gigabytes scanned); now each byte is looked at once.
    stream = b"\n" * (256 * 1024)
    parser = SSEParser()
    started = time.monotonic()
    for start in range(0, len(stream), 65536):
        parser.feed(stream[start : start + 65536])
    assert parser.feed(b"data: done\n\n")[0].data == "done"
    assert time.monotonic() - started < 20  # quadratic: minutes; generous: a loaded machine is slow


# --- the session: discover, initialize, tools/list --------------------------------------------------------


@settings(FUZZ, max_examples=80)
@given(data=st.data(), transport=st.sampled_from([Transport.HTTP, Transport.SSE]))
def test_the_session_turns_any_answers_into_a_clean_outcome(data: st.DataObject, transport: Transport) -> None:
    entry = ServerEntry(
        name="fuzz", transport=transport, url="http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {SECRET}"}
    )
    with (
        mock.patch.object(session_module, "candidates", lambda *_args: [lambda: ScriptedTransport(data)]),
        bounded_memory(),
    ):
        outcome = anyio.run(scan_server, entry, LIMITS, "rich")
    assert isinstance(outcome, ScanOutcome)
    event(outcome.outcome.value)
    assert "client_error" not in outcome.extra, outcome.detail  # a bug of ours, not the server's fault
    fields = [outcome.detail, outcome.server_name, outcome.server_version, outcome.protocol_version]
    assert_writable([*fields, outcome.tools, dict(outcome.extra)])
    text = json.dumps([*fields, outcome.tools, dict(outcome.extra)], ensure_ascii=False)
    for shape in (SECRET, quote(SECRET, safe=""), base64.b64encode(SECRET.encode()).decode()):
        assert shape not in text
    if outcome.outcome is Outcome.OK:
        assert outcome.tools is not None and len(outcome.tools) <= LIMITS.max_tools


# --- auth: WWW-Authenticate and RFC 9728 metadata; HTTP error bodies --------------------------------------


@FUZZ
@given(
    header=st.one_of(
        st.text(max_size=300),
        st.sampled_from(
            [
                'Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"',
                'Bearer error="invalid_token", error_description="expired \\"x\\""',
                "Basic realm=x, Bearer scope=y",
            ]
        ).flatmap(lambda seed: st.text(max_size=5).map(lambda noise: seed[: len(seed) // 2] + noise + seed)),
    )
)
def test_challenge_parsing_takes_any_header(header: str) -> None:
    with bounded_memory():
        challenge = parse_challenge(header)
    assert set(challenge) == {"scheme", "params"}
    assert_writable(challenge)


METADATA = json.dumps(
    {
        "resource": "https://example.com/mcp",
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["tools:read"],
        "bearer_methods_supported": ["header"],
    }
).encode()


@st.composite
def coded_bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    """A body and its Content-Encoding: honest, stacked, lying about its coding, or unknown."""
    body = draw(st.one_of(st.just(METADATA).flatmap(lambda raw: byte_mutated(raw)), st.binary(max_size=300)))
    coding = draw(st.sampled_from(["", "identity", "gzip", "deflate", "gzip, gzip", "gzip, deflate", "br", "x"]))
    honest = draw(st.booleans())
    if honest:
        for part in [p.strip() for p in coding.split(",") if p.strip()]:
            if part == "gzip":
                body = gzip.compress(body)
            elif part == "deflate":
                body = zlib.compress(body)
    return body, coding


@FUZZ
@given(coded=coded_bodies(), status=st.sampled_from([200, 200, 404, 500]))
def test_metadata_fetch_takes_any_body_and_coding(coded: tuple[bytes, str], status: int) -> None:
    body, coding = coded
    headers = {"Content-Type": "application/json"} | ({"Content-Encoding": coding} if coding else {})

    async def fetch() -> tuple[dict[str, Any] | None, str]:
        def answer(_request: httpx.Request) -> httpx.Response:
            return httpx.Response(status, headers=headers, stream=httpx.ByteStream(body))  # a stream, as on a socket

        transport = httpx.MockTransport(answer)
        async with httpx.AsyncClient(transport=transport) as client:
            return await fetch_metadata(client, "http://127.0.0.1:9/.well-known/oauth-protected-resource", LIMITS)

    with bounded_memory():
        metadata, error = anyio.run(fetch)
    assert (metadata is None) != (error == "")
    assert metadata is None or isinstance(metadata, dict)
    assert_writable([metadata, error])


@FUZZ
@given(
    body=st.one_of(st.binary(max_size=400), st.just(b'{"error": {"message": "x"}}').flatmap(lambda r: byte_mutated(r))),
    kind=st.sampled_from(["application/json", "text/html", "text/plain", "", "application/problem+json"]),
)
def test_error_body_reason_takes_any_bytes(body: bytes, kind: str) -> None:
    with bounded_memory():
        reason = body_reason(body, kind)
    assert len(reason) <= 200 and "\n" not in reason
    assert_writable(reason)


@FUZZ
@given(coded=coded_bodies(), cuts=st.lists(st.integers(0, 400), max_size=5))
def test_the_body_decoder_raises_only_its_own_error(coded: tuple[bytes, str], cuts: list[int]) -> None:
    body, coding = coded
    points = sorted({0, len(body), *(cut for cut in cuts if cut <= len(body))})
    out = b""
    with bounded_memory():
        try:
            decoder = BodyDecoder(coding, 4096)
            out = b"".join(piece for a, b in itertools.pairwise(points) for piece in decoder.feed(body[a:b]))
            out += b"".join(decoder.finish())
        except BodyError as error:
            assert error.kind in ("too_large", "undecodable")
    assert len(out) <= 4096
