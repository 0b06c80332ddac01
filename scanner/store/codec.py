"""How values cross into the database: compressed tool lists, and small secret-free JSON for options and extras.

Nothing a server sends is trusted, and nothing secret is stored: option and extra mappings are scrubbed of keys
that carry credentials (headers, env, tokens, passwords...), strings are cut, depth and breadth are capped, so a
scan row stays small however chatty or hostile the server was. Every string and key that leaves this module for a
column has had NUL and lone surrogates replaced (:func:`scanner.wire.clean_str`), even when the parse edge that
made it forgot: PostgreSQL refuses NUL in text, and no driver encodes a lone surrogate.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import shlex
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scanner.errors import StoreError
from scanner.wire import clean_str, sanitize

MAX_DETAIL = 500  # characters of a scan's one-line detail
MAX_STRING = 300  # characters of any string inside a stored JSON value
MAX_ITEMS = 20  # items kept from any list or mapping inside a stored JSON value
MAX_DEPTH = 4
MAX_JSON_BYTES = 2048  # a scan's ``extra`` (or a run's ``options``) larger than this is cut down further
MAX_TOOLSET_BYTES = 64 * 1024 * 1024  # refuse to inflate a stored toolset past this (a corrupt or hostile row)

_SECRET_KEY = re.compile(
    r"(secret|passw|credential|authoriz|cookie|api[-_]?key|bearer|private[-_]?key|session[-_]?id|"
    r"^headers?$|^env$|^environ|^token$|[-_]token$|^auth$|^access[-_]|^refresh[-_])",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"^\s*(bearer|basic)\s+\S", re.IGNORECASE)
_INLINE_CREDENTIAL = re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_QUERY_CREDENTIAL = re.compile(
    r"([?&][^=&\s#]*(?:key|token|secret|passw|auth|sig|credential)[^=&\s#]*=)[^&\s#]+", re.IGNORECASE
)
_URL_PASSWORD = re.compile(r"(//[^/\s:@]+:)[^@/\s]+@")


def compress_tools(tools: tuple[Any, ...] | list[Any]) -> tuple[bytes, int]:
    """A tool list as compact JSON in the server's own key order, zlib-compressed, and its size in bytes.

    Not the sorted canonical form the hash is taken over: some provider views keep the key order they are given
    (Gemini's), so a rescore must see the same document the scan measured to give the same counts.
    """
    text = json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the parse edge let through: store what wire would have made
        raw = json.dumps(sanitize(list(tools)), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return zlib.compress(raw, 6), len(raw)


class UnreadableToolset(StoreError, ValueError):
    """A stored tool list that cannot be read (a StoreError for the CLI's one line; a ValueError as before)."""


def decompress_tools(data: bytes) -> list[Any]:
    """The tool list back from :func:`compress_tools` (capped, so a corrupt row cannot exhaust memory).

    A row that cannot be read (not zlib, not UTF-8 JSON, too large, not bytes) is a
    :class:`~scanner.errors.StoreError` saying so, never a traceback: a reader that can do without the list
    skips it (the report's pages), one that cannot (``check --db``, ``diff``) stops with that one line."""
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(bytes(data), MAX_TOOLSET_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError("it inflates past the size cap")
        value = json.loads(raw.decode("utf-8"))
    except (zlib.error, ValueError, TypeError, RecursionError) as exc:
        raise UnreadableToolset(f"a stored tool list cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from exc
    return value if isinstance(value, list) else []


def redact(text: str) -> str:
    """``text`` with inline credentials masked: ``Bearer …`` tokens, key-like URL query values, URL passwords.

    Error details quote URLs and headers back; the store keeps the sentence, never the secret in it.
    """
    text = _INLINE_CREDENTIAL.sub(lambda m: f"{m.group(1)} [redacted]", clean_str(text))
    text = _QUERY_CREDENTIAL.sub(lambda m: f"{m.group(1)}[redacted]", text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}[redacted]@", text)


# A value this short is not taken for a secret when blanking known values out of a command line ("1", "true").
_MIN_SECRET_CHARS = 6
MAX_COMMAND = 2000


def _known(secrets: Iterable[str]) -> list[str]:
    return sorted({value for value in secrets if len(value) >= _MIN_SECRET_CHARS}, key=len, reverse=True)


def redact_known(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret value (at least six characters) blanked as ``<secret>``, then
    :func:`redact`."""
    for value in _known(secrets):
        text = text.replace(value, "<secret>")
    return redact(text)


def blank_known(value: Any, secrets: Iterable[str], depth: int = 0) -> Any:
    """``value`` (JSON-like) with every known secret value blanked as ``<secret>`` in each string, keys
    included; deeper than :data:`MAX_DEPTH` levels, what would be cut anyway becomes None."""
    known = _known(secrets)
    if not known:
        return value
    return _blank(value, known, depth)


def _blank(value: Any, known: list[str], depth: int) -> Any:
    if isinstance(value, str):
        for secret in known:
            value = value.replace(secret, "<secret>")
        return value
    if depth > MAX_DEPTH + 1:
        return None
    if isinstance(value, Mapping):
        return {_blank(str(k), known, depth): _blank(v, known, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_blank(item, known, depth + 1) for item in value]
    return value


def redact_command(words: Sequence[str], secrets: Iterable[str] = ()) -> str:
    """A command line as it is stored and shown: quoted as a shell would read it, every known secret value
    (``secrets``: the entry's env and header values) blanked as ``<secret>``, the value of a flag whose name looks
    like a credential (``--api-key X``, ``--token=X``) blanked, and inline credentials masked (:func:`redact`)."""
    known = _known(secrets)
    shown: list[str] = []
    blank_next = False
    for word in words:
        text = str(word)
        for value in known:
            text = text.replace(value, "<secret>")
        if blank_next:
            text, blank_next = "<secret>", False
        elif text.startswith("-"):
            flag, equals, _value = text.partition("=")
            if is_secret_key(flag.lstrip("-")):
                if equals:
                    text = f"{flag}=<secret>"
                else:
                    blank_next = True
        shown.append(redact(text))
    return shlex.join(shown)[:MAX_COMMAND]


def is_secret_key(key: str) -> bool:
    """True for a mapping key whose value is (or may be) a credential and is never stored."""
    return bool(_SECRET_KEY.search(key))


def _clean(value: Any, depth: int, caps: _Caps) -> Any:
    # Exact-type fast paths for what JSON values are made of (every finding, event and scan goes through here);
    # anything else, subclasses included, takes the general path below with the same result.
    kind = type(value)
    if kind is str:
        if caps.scrub:
            return None if _SECRET_VALUE.match(value) else redact(value[: caps.string * 2])[: caps.string]
        return clean_str(value[: caps.string])
    if kind is int or kind is bool or value is None:
        return value
    if kind is dict and depth < caps.depth:
        cleaned: dict[str, Any] = {}
        for key, item in itertools.islice(value.items(), caps.items):
            text = clean_str(key[:100] if type(key) is str else str(key)[:100])
            if caps.scrub and is_secret_key(text):
                continue
            cleaned[text] = _clean(item, depth + 1, caps)
        return cleaned
    if kind is list and depth < caps.depth:
        return [_clean(item, depth + 1, caps) for item in value[: caps.items]]
    return _clean_any(value, depth, caps)


def _clean_any(value: Any, depth: int, caps: _Caps) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return round(value, 3) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        if caps.scrub:
            return None if _SECRET_VALUE.match(value) else redact(value[: caps.string * 2])[: caps.string]
        return clean_str(value[: caps.string])
    if depth >= caps.depth:
        return None
    if isinstance(value, Mapping):
        cleaned: dict[str, Any] = {}
        for key, item in itertools.islice(value.items(), caps.items):
            text = clean_str(str(key)[:100])
            if caps.scrub and is_secret_key(text):
                continue
            cleaned[text] = _clean(item, depth + 1, caps)
        return cleaned
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(item, depth + 1, caps) for item in list(value)[: caps.items]]
    return clean_str(str(value)[: caps.string])


@dataclass(frozen=True)
class _Caps:
    scrub: bool
    items: int
    depth: int
    string: int


def small_json(
    value: Mapping[str, Any] | None,
    limit: int = MAX_JSON_BYTES,
    *,
    scrub: bool = True,
    items: int = MAX_ITEMS,
    depth: int = MAX_DEPTH,
    string: int = MAX_STRING,
) -> dict[str, Any]:
    """A size-capped copy of ``value`` for a JSON column; keys are dropped from the end to fit ``limit`` bytes.

    ``scrub`` (the default, for anything a server or a user's options sent) also drops credential-like keys and
    ``Bearer``/``Basic`` values. Finding and event details are Fathom's own words about a tool: they keep every
    key, with roomier caps.
    """
    if not value:
        return {}
    cleaned = _clean(value, 0, _caps(scrub, items, depth, string))
    if not isinstance(cleaned, dict):
        return {}
    if _surely_fits(cleaned, limit):
        return cleaned
    keys = [key for key in cleaned if key != "truncated"]
    # The size of the canonical text without sorting its keys: the same characters in another order.
    while keys and len(json.dumps(cleaned, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) > limit:
        cleaned.pop(keys.pop())
        cleaned["truncated"] = True
    return cleaned


_caps = functools.lru_cache(maxsize=8)(_Caps)


def _surely_fits(cleaned: dict[str, Any], limit: int) -> bool:
    """Whether the compact UTF-8 JSON of ``cleaned`` (what :func:`_clean` returns: dicts with ``str`` keys, lists,
    strings, ints, rounded finite floats, booleans, None) is certainly at most ``limit`` bytes, judged by its
    ``repr`` (C speed) instead of encoding it: most values are a small fraction of their cap.

    Per character of that ``repr``, the JSON takes at most 4 bytes (a printable non-ASCII character, shown as
    itself, is up to 4 bytes of UTF-8), and at most 2 when the ``repr`` is ASCII (every non-ASCII character is then
    an escape of 4 to 10 characters for its 2 to 4 bytes; a control character's ``\\xNN`` is 4 for JSON's 6
    ``\\u00NN``; a ``"`` inside ``'...'`` is 1 for JSON's 2). Numbers and literals are as long in both; ``repr``
    separates with ``", "`` and ``": "``. When unsure, the caller encodes.
    """
    shown = repr(cleaned)
    return len(shown) * (2 if shown.isascii() else 4) <= limit


def details_json(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A finding's or event's details: every key kept, capped at 8 KB, 100 items, depth 6, 500-char strings."""
    return small_json(value, 8192, scrub=False, items=100, depth=6, string=500)


def timings(value: Mapping[str, Any] | None) -> dict[str, float]:
    """Phase timings in milliseconds, rounded to 0.1 ms, at most a dozen phases."""
    result: dict[str, float] = {}
    for key, item in list((value or {}).items())[:12]:
        if isinstance(item, int | float) and not isinstance(item, bool) and item == item:
            result[str(key)[:40]] = round(float(item), 1)
    return result


def text(value: Any, limit: int) -> str | None:
    """A string column value from something a server sent: strings cut to ``limit`` (NUL and lone surrogates
    replaced), other types dropped."""
    if isinstance(value, str):
        return clean_str(value[:limit])
    return None
