"""Defensive readers for untrusted JSON: a registry row may hold a number where a name belongs.

Every reader returns a typed value or a safe empty one, so the code that resolves entries never crashes on a
wrong type and never follows an unbounded string.
"""

from __future__ import annotations

from typing import Any

MAX_TEXT = 8192  # longest string taken from a registry field (URLs, header values, arguments)


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
