"""Defensive readers for untrusted JSON: a registry row may hold a number where a name belongs.

Every reader returns a typed value or a safe empty one, so the code that resolves entries never crashes on a
wrong type and never follows an unbounded string.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT = 8192  # longest string taken from a registry field (URLs, header values, arguments)
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")  # an RFC 9110 token
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]*$")  # visible ASCII, space and tab: what an HTTP client sends as is


def text(value: Any, *, limit: int = MAX_TEXT) -> str | None:
    """``value`` if it is a non-empty string no longer than ``limit``, else None."""
    if isinstance(value, str) and value and len(value) <= limit:
        return value
    return None


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def items(value: Any, *, limit: int = 1000) -> list[dict[str, Any]]:
    """The objects in a JSON array (non-objects dropped), at most ``limit`` of them."""
    if not isinstance(value, list):
        return []
    return [item for item in value[:limit] if isinstance(item, dict)]


def field(data: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    """A field by its camelCase name, or by its pre-2025-09-16 snake_case name."""
    if camel in data:
        return data[camel]
    if snake is not None:
        return data.get(snake)
    return None


def flag(data: dict[str, Any], camel: str, snake: str) -> bool:
    """A boolean field (either spelling); anything but a real ``true`` is false."""
    return field(data, camel, snake) is True


def header_usable(name: Any, value: Any) -> bool:
    """Whether ``name: value`` can be sent: a token name and a value of visible ASCII (no CR, LF or NUL), so a
    registry value can neither inject a header nor make the HTTP client raise while building the request."""
    return (
        isinstance(name, str)
        and isinstance(value, str)
        and HEADER_NAME.match(name) is not None
        and len(value) <= MAX_TEXT
        and _HEADER_VALUE.match(value) is not None
    )
