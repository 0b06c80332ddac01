"""How values cross into the database: compressed tool lists, and small secret-free JSON for options and extras.

Nothing a server sends is trusted, and nothing secret is stored: option and extra mappings are scrubbed of keys
that carry credentials (headers, env, tokens, passwords...), strings are cut, depth and breadth are capped, so a
scan row stays small however chatty or hostile the server was.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

from scanner.models import canonical_json

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


def compress_tools(tools: tuple[Any, ...] | list[Any]) -> tuple[bytes, int]:
    """The canonical JSON of a tool list, zlib-compressed, and its uncompressed size in bytes."""
    raw = canonical_json(list(tools)).encode("utf-8")
    return zlib.compress(raw, 6), len(raw)


def decompress_tools(data: bytes) -> list[Any]:
    """The tool list back from :func:`compress_tools` (capped, so a corrupt row cannot exhaust memory)."""
    inflater = zlib.decompressobj()
    raw = inflater.decompress(data, MAX_TOOLSET_BYTES)
    if inflater.unconsumed_tail:
        raise ValueError("stored toolset inflates past the size cap")
    value = json.loads(raw.decode("utf-8"))
    return value if isinstance(value, list) else []


def is_secret_key(key: str) -> bool:
    """True for a mapping key whose value is (or may be) a credential and is never stored."""
    return bool(_SECRET_KEY.search(key))


def _clean(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return round(value, 3) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        return None if _SECRET_VALUE.match(value) else value[:MAX_STRING]
    if depth >= MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        cleaned: dict[str, Any] = {}
        for key, item in list(value.items())[:MAX_ITEMS]:
            text = str(key)[:100]
            if is_secret_key(text):
                continue
            cleaned[text] = _clean(item, depth + 1)
        return cleaned
    if isinstance(value, list | tuple | set | frozenset):
        return [_clean(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
    return str(value)[:MAX_STRING]


def small_json(value: Mapping[str, Any] | None, limit: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """A secret-free, size-capped copy of ``value`` for a JSON column; keys are dropped from the end to fit."""
    if not value:
        return {}
    cleaned = _clean(value, 0)
    if not isinstance(cleaned, dict):
        return {}
    keys = [key for key in cleaned if key != "truncated"]
    while keys and len(canonical_json(cleaned).encode("utf-8")) > limit:
        cleaned.pop(keys.pop())
        cleaned["truncated"] = True
    return cleaned


def timings(value: Mapping[str, Any] | None) -> dict[str, float]:
    """Phase timings in milliseconds, rounded to 0.1 ms, at most a dozen phases."""
    result: dict[str, float] = {}
    for key, item in list((value or {}).items())[:12]:
        if isinstance(item, int | float) and not isinstance(item, bool) and item == item:
            result[str(key)[:40]] = round(float(item), 1)
    return result


def text(value: Any, limit: int) -> str | None:
    """A string column value from something a server sent: strings cut to ``limit``, other types dropped."""
    if isinstance(value, str):
        return value[:limit]
    return None
