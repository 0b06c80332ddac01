"""Numbers JSON cannot hold (NaN, Infinity) in what ``fathom try`` reads and writes.

Python's ``json`` reads a bare ``NaN`` or ``Infinity`` from a tool list or a JSON Lines cases file, and YAML's
``.nan`` and ``.inf`` are floats; a request body cannot carry one (the HTTP client refuses it with a traceback) and
strict JSON output cannot either. So what ``try`` reads is checked before anything is sent
(:func:`first_non_finite`: an :class:`~scanner.errors.InputError` naming where, one line), and what it writes
(``--format json``, ``--save``) goes through :func:`finite`, which writes ``null`` for any such number that
reached it another way: never a bare ``NaN``.
"""

from __future__ import annotations

import math
from typing import Any

from scanner.trial.validate import pointer

_MAX_NODES = 1_000_000


def first_non_finite(value: Any) -> str | None:
    """The JSON Pointer of the first NaN or infinite number in ``value`` (None when there is none)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    seen = 0
    while stack and seen < _MAX_NODES:
        item, path = stack.pop()
        seen += 1
        if isinstance(item, float) and not math.isfinite(item):
            return pointer(path)
        if isinstance(item, dict):
            stack.extend((child, (*path, key)) for key, child in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((child, (*path, index)) for index, child in reversed(list(enumerate(item))))
    return None


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite number replaced by None (tuples become lists, as JSON writes them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value
