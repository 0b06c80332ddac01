"""Read a tool list from a file or stdin: the input edge of ``fathom check --tools-file``.

Three shapes are accepted, because they are what people have at hand: a JSON array of tools, a ``tools/list``
result ``{"tools": [...]}``, and a whole JSON-RPC response ``{"result": {"tools": [...]}}``. Anything else is an
:class:`~scanner.errors.InputError` with one line saying what was found instead.

The bytes are capped before they are parsed (a 100 MB file is refused at once, not parsed), and a document nested
deeper than the JSON parser can follow is refused with a clear line rather than a traceback. A tool list is a list
of tools: an array holding anything but objects (``[1, 2, 3]``, a string, null) is not one and is refused with a
line naming the first such item. The tools themselves stay raw: every object, however malformed, goes to the rules
untouched (a server that sends a non-object is judged by the rules instead, since its list was read).
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

from scanner import wire
from scanner.errors import InputError

DEFAULT_MAX_BYTES = 32 * 1024 * 1024


def _read_capped(stream: BinaryIO, max_bytes: int, label: str) -> bytes:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{label} is larger than the {_mib(max_bytes)} limit (--max-bytes)")
    return data


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def read_source(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The raw bytes of ``path`` (``-`` for stdin), refusing anything over ``max_bytes``."""
    if path == "-":
        return _read_capped(sys.stdin.buffer, max_bytes, "standard input")
    from scanner import safefile

    try:
        return safefile.read_regular(path, label=path, max_bytes=max_bytes)
    except InputError as exc:
        if "limit" in str(exc):  # say which flag sets it
            raise InputError(f"{exc} (--max-bytes)") from exc
        raise


def parse_json(data: bytes, label: str) -> Any:
    """Parse JSON bytes, turning every way it can fail into one clear :class:`InputError` line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label} is not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():  # "Expecting value at line 1 column 1" would not say it
        raise InputError(f'{label} is empty: give a tool list (a JSON array of tools, or {{"tools": [...]}})')
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise InputError(f"{label} nests JSON deeper than can be read (about 1000 levels)") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{label} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    return wire.sanitize(value) if wire.may_hold_unwritable(text) else value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def extract_tools(document: Any, label: str) -> list[Any]:
    """The tool array inside one of the accepted shapes."""
    if isinstance(document, list):
        return _only_tools(document, label)
    if isinstance(document, dict):
        if "tools" in document:
            tools = document["tools"]
            where = '"tools"'
        elif isinstance(document.get("result"), dict) and "tools" in document["result"]:
            tools = document["result"]["tools"]
            where = '"result.tools"'
        elif "error" in document and "jsonrpc" in document:
            error = document["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise InputError(f"{label} is a JSON-RPC error response, not a tool list: {str(message)[:200]}")
        else:
            keys = ", ".join(sorted(str(key) for key in list(document)[:8])) or "none"
            raise InputError(
                f"{label} is an object without a tool list (expected a tools array, "
                f'{{"tools": [...]}} or {{"result": {{"tools": [...]}}}}; keys found: {keys})'
            )
        if not isinstance(tools, list):
            raise InputError(f"{label}: {where} is {_kind(tools)}, not an array of tools")
        return _only_tools(tools, label)
    raise InputError(
        f'{label} is {_kind(document)}; expected a tools array, {{"tools": [...]}} or {{"result": {{"tools": [...]}}}}'
    )


def _only_tools(tools: list[Any], label: str) -> list[Any]:
    """``tools`` when every item is an object (a tool, however malformed); otherwise one line naming the first item
    that is not, and how many are not."""
    strays = [index for index, tool in enumerate(tools) if not isinstance(tool, dict)]
    if strays:
        first = strays[0]
        more = f" ({len(strays)} of its {len(tools)} items are not objects)" if len(strays) > 1 else ""
        raise InputError(f"{label} is not a tool list: item {first} is {_kind(tools[first])}, not a tool object{more}")
    return tools


def load_tools(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Any]:
    """Read, parse and unwrap a tool list from ``path`` (``-`` for stdin)."""
    label = "standard input" if path == "-" else path
    return extract_tools(parse_json(read_source(path, max_bytes), label), label)
