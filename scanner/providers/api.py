"""Asking a provider's model one question: the interface each provider's wire module implements, and the HTTP.

The view modules (``anthropic.py``, ``openai.py``, ``gemini.py``) say what a provider's API receives as ``tools``;
their ``*_api.py`` neighbours build the rest of the request around that view and read the answer. This module
holds what the three share: the frozen answer types, one bounded HTTP exchange with retries, and the errors.

    ModelApi.endpoint(base, model)          -> the URL one turn is POSTed to
    ModelApi.body(model, prompt, tools, n)  -> the JSON body (tools: exactly ``provider_view``)
    ModelApi.parse(document)                -> ModelAnswer (calls, text, why it stopped, usage)
    send(api, call)                         -> Exchange (request without its key, response), or ModelApiError

Nothing the provider sends is trusted: the body is read up to :data:`MAX_ANSWER_BYTES`, decoded with
:mod:`scanner.wire`, and every field is checked before use; a shape that does not fit is a
:class:`MalformedAnswer`. The key is sent in a header and never appears in a URL, a transcript or a message.

    FathomError
     ├── MissingKey          exit 4: the provider's key variable is not set
     └── ModelApiError       exit 5: the provider refused or failed (401/403, 404, 429 after retries, 5xx, ...)
          └── MalformedAnswer        the answer is not the provider's documented shape
"""

from __future__ import annotations

import email.utils
import enum
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from scanner import wire
from scanner.errors import FathomError
from scanner.mcp.body import ACCEPT_ENCODING

MAX_ANSWER_BYTES = 8 << 20
"""Largest answer body read from a provider (a one-turn answer is a few KiB)."""

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Statuses worth another try: timeouts, rate limits, overload (Anthropic's 529) and server errors."""


AUTH_KINDS = frozenset({"API_KEY_INVALID"})
"""Error kinds that mean a rejected key whatever the status (Gemini answers 400 API_KEY_INVALID)."""


class MissingKey(FathomError):
    """The provider's API key variable is not set (exit 4, an environment error)."""

    exit_code = 4


class ModelApiError(FathomError):
    """The provider refused or failed the request; one line saying which and why (exit 5)."""

    exit_code = 5


class MalformedAnswer(ModelApiError):
    """The answer is not JSON or not the provider's documented shape."""


class Stop(enum.StrEnum):
    """Why the model stopped, in words common to the three providers (the raw reason is kept beside it)."""

    TOOL_USE = "tool_use"  # it asked for one or more tool calls
    END_TURN = "end_turn"  # it finished its answer
    MAX_TOKENS = "max_tokens"  # cut at the output limit: the answer is truncated
    REFUSAL = "refusal"  # the model declined
    FILTERED = "content_filtered"  # the provider's safety system blocked the prompt or the answer
    MALFORMED_CALL = "malformed_call"  # the provider says the model produced a call it could not parse
    OTHER = "other"  # any reason Fathom does not know; the raw reason says which


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for (never executed). ``arguments`` is None when ``arguments_error`` says why."""

    name: str
    arguments: Any
    arguments_error: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens as the provider reports them; ``details`` keeps its other counters (cache, thinking) by name."""

    input_tokens: int | None
    output_tokens: int | None
    details: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelAnswer:
    """What the model answered in one turn."""

    calls: tuple[ToolCall, ...]
    text: str
    stop: Stop
    stop_reason: str  # the provider's own word for it (``end_turn``, ``length``, ``SAFETY``, ...)
    usage: Usage
    model: str | None = None  # the model the provider says answered, when it says
    refusal: str | None = None  # a refusal's own text (OpenAI's ``message.refusal``)


@dataclass(frozen=True)
class Limits:
    """Bounds on one exchange: per-attempt timeout, retries, and the longest wait a Retry-After may ask for."""

    timeout: float = 120.0
    connect_timeout: float = 10.0
    retries: int = 2
    max_retry_wait: float = 60.0
    backoff: float = 1.0  # first wait without a Retry-After, doubled each retry


@dataclass(frozen=True)
class Call:
    """One request ready to go: the URL, headers without the key, the key's own headers apart, the body."""

    url: str
    headers: Mapping[str, str]
    auth_headers: Mapping[str, str]
    body: dict[str, Any]
    key_env: str | None  # the variable the key came from, named in errors (None: no key sent)


@dataclass(frozen=True)
class Exchange:
    """A finished exchange as a transcript keeps it: the request WITHOUT its key, and the answer."""

    url: str
    request_headers: Mapping[str, str]
    request_body: dict[str, Any]
    status: int
    response_body: Any
    attempts: int
    seconds: float


class ModelApi(ABC):
    """One provider's wire format for a single turn with tools (see the module docstring)."""

    provider: str  # the view name in :mod:`scanner.providers`
    label: str  # the provider's name for people
    key_envs: tuple[str, ...]  # key variables, first set wins
    base_url_env: str  # the provider's usual base-URL variable
    default_base_url: str
    price_provider_id: str  # the provider's id in genai-prices

    @abstractmethod
    def endpoint(self, base_url: str, model: str) -> str:
        """The URL one turn is POSTed to, for a base URL without a trailing slash."""

    @abstractmethod
    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry the key (kept apart so a transcript never holds them)."""

    def headers(self) -> dict[str, str]:
        """The other request headers (kept in a transcript)."""
        return {"content-type": "application/json"}

    @abstractmethod
    def body(
        self, model: str, prompt: str, tools: list[dict[str, Any]], max_tokens: int, *, custom_base: bool
    ) -> dict[str, Any]:
        """The JSON body of one turn: the prompt as the user's message, ``tools`` as given, tool choice auto."""

    @abstractmethod
    def parse(self, document: Any) -> ModelAnswer:
        """The answer in a 2xx body; raises :class:`MalformedAnswer` for a shape that does not fit."""

    @abstractmethod
    def error_detail(self, document: Any) -> tuple[str, str]:
        """The provider's error type (or status word) and message from an error body ("" when absent)."""

    @staticmethod
    def declared_names(tools: list[dict[str, Any]]) -> list[str]:
        """The tool names in a view, in order (what the model may call)."""
        return [str(tool.get("name", "")) for tool in tools]


def redact_url(url: str) -> str:
    """``url`` without user:password (a gateway URL may carry them), for messages and transcripts."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds a 429/503 asks to wait: ``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        return max(0.0, when.timestamp() - current)
    return value if math.isfinite(value) and value >= 0 else None


class _AttemptOver(Exception):
    """The attempt's deadline passed while the answer was still arriving."""


def _read_capped(response: httpx.Response, deadline: float) -> bytes:
    """The answer body: raw bytes through the one capped decoder (:mod:`scanner.mcp.body`: a ``gzip, gzip`` bomb
    never inflates past the cap), read until ``deadline`` (``time.monotonic``) at the latest."""
    from scanner.mcp.body import BodyDecoder, BodyError

    decoder = BodyDecoder(response.headers.get("content-encoding", ""), MAX_ANSWER_BYTES, "the answer")
    body = bytearray()
    try:
        for chunk in response.iter_raw():
            for piece in decoder.feed(chunk):
                body += piece
            if time.monotonic() > deadline:
                raise _AttemptOver
        for piece in decoder.finish():
            body += piece
    except BodyError as exc:
        if exc.kind == "too_large":
            raise MalformedAnswer(f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MiB; not read") from None
        raise MalformedAnswer(f"the answer cannot be decoded ({exc.message})") from None
    return bytes(body)


def _redact(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every shape of the key (as is, in its header, URL-encoded, JSON-escaped, base64, cut) and every
    other secret this process holds replaced (:class:`scanner.scrub.Scrubber`)."""
    return _scrubber(secrets).text(text)


def _scrubber(secrets: Mapping[str, str]) -> Any:
    from scanner.scrub import Scrubber

    return Scrubber.for_headers([secrets])


def _strict(value: Any) -> Any:
    """A JSON value with every non-finite number (``NaN``, ``Infinity``: not JSON) as None, so what is printed
    and saved is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_strict(item) for item in value]
    return value


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def send(
    api: ModelApi,
    call: Call,
    limits: Limits = Limits(),
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Exchange, ModelAnswer]:
    """POST one turn, retrying 408/429/5xx/timeouts up to ``limits.retries`` times, and parse the answer.

    A Retry-After longer than ``limits.max_retry_wait`` is not waited for: the error says how long was asked.
    Every failure is a :class:`ModelApiError` with one line naming the provider, the status and what to do.
    """
    where = redact_url(call.url)
    timeout = httpx.Timeout(limits.timeout, connect=limits.connect_timeout)
    # Only the codings the capped decoder undoes (httpx would offer br and zstd when installed).
    headers = {"Accept-Encoding": ACCEPT_ENCODING, **call.headers, **call.auth_headers}
    scrubber = _scrubber(call.auth_headers)
    started = time.monotonic()
    attempt = 0
    with httpx.Client(timeout=timeout, follow_redirects=False, transport=transport) as client:
        while True:
            attempt += 1
            wait: float | None = None
            deadline = time.monotonic() + limits.timeout  # the whole attempt, not each read
            try:
                with client.stream("POST", call.url, json=call.body, headers=headers) as response:
                    status = response.status_code
                    raw = _read_capped(response, deadline)
                    response_headers = response.headers
            except (httpx.TimeoutException, _AttemptOver) as exc:
                failure = f"{api.label} did not answer within {limits.timeout:g} s ({type(exc).__name__.strip('_')})"
                if attempt > limits.retries:
                    raise ModelApiError(f"{failure} at {where}; tried {attempt} times") from exc
                sleep(min(limits.backoff * 2 ** (attempt - 1), limits.max_retry_wait))
                continue
            except httpx.HTTPError as exc:
                reason = _one_line(_redact(str(exc), call.auth_headers)) or type(exc).__name__
                raise ModelApiError(f"cannot reach {api.label} at {where}: {reason}") from exc
            document: Any = None
            text = scrubber.text(wire.decode_bytes(raw))  # a provider may echo the key: never printed or saved
            try:
                document = _strict(scrubber.value(wire.loads(raw))) if raw else None
            except (ValueError, RecursionError):
                document = None
            if 200 <= status < 300:
                if document is None:
                    # As written (so an echoed key is scrubbed), on one line and capped: never the key.
                    kind = _one_line(scrubber.text(response_headers.get("content-type", "no content type")))[:100]
                    raise MalformedAnswer(f"{api.label} answered {status} with a body that is not JSON ({kind})")
                try:
                    answer = api.parse(document)
                except (TypeError, AttributeError, KeyError, IndexError) as exc:  # a shape no check foresaw
                    shape = type(exc).__name__
                    raise MalformedAnswer(f"{api.label}'s answer has an unexpected shape ({shape})") from None
                exchange = Exchange(
                    url=where,
                    request_headers=dict(call.headers),
                    request_body=call.body,
                    status=status,
                    response_body=document,
                    attempts=attempt,
                    seconds=round(time.monotonic() - started, 3),
                )
                return exchange, answer
            try:
                kind, message = api.error_detail(document) if document is not None else ("", "")
            except (TypeError, AttributeError, KeyError, IndexError):
                kind, message = "", ""
            if not message and status >= 400:
                message = _one_line(text, 120)
            message = _one_line(_redact(message, call.auth_headers))
            if status in RETRIED_STATUSES and attempt <= limits.retries:
                asked = retry_after(response_headers)
                wait = asked if asked is not None else limits.backoff * 2 ** (attempt - 1)
                if wait <= limits.max_retry_wait:
                    sleep(wait)
                    continue
                raise ModelApiError(
                    f"{api.label} answered {status}{_kind(kind)} and asks to wait {wait:.0f} s before retrying, "
                    f"more than the {limits.max_retry_wait:g} s allowed; try again later"
                )
            raise ModelApiError(_status_line(api, call, status, kind, message, attempt))


def _kind(kind: str) -> str:
    return f" {kind}" if kind else ""


def _status_line(api: ModelApi, call: Call, status: int, kind: str, message: str, attempts: int) -> str:
    said = f": {message}" if message else ""
    if status in (401, 403) or kind in AUTH_KINDS:
        # The provider's own message may quote part of the key; the type is enough to act on.
        where = f"the key in {call.key_env}" if call.key_env else "a request without a key"
        verb = "is not allowed to use this model with" if status == 403 else "rejected"
        return f"{api.label} {verb} {where} ({status}{_kind(kind)}); check the key and its permissions"
    if status == 404:
        return f"{api.label} answered 404{_kind(kind)}: model or endpoint not found at {redact_url(call.url)}{said}"
    if status == 429:
        return f"{api.label} is rate limiting this key (429{_kind(kind)}) after {attempts} tries{said}"
    if status >= 500:
        return f"{api.label} failed with {status}{_kind(kind)} after {attempts} tries{said}"
    if 300 <= status < 400:
        return f"{api.label} answered a redirect ({status}); give the final URL with --base-url"
    return f"{api.label} refused the request ({status}{_kind(kind)}){said}"


def need_int(value: Any) -> int | None:
    """A token count from an answer: a non-negative int, else None (a provider may leave one out)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def as_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (an optional part of an answer that is absent)."""
    return value if isinstance(value, dict) else {}


def need_object(value: Any, what: str, label: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{label}'s answer has no {what} object")
    return value


def need_list(value: Any, what: str, label: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedAnswer(f"{label}'s answer has no {what} list")
    return value
