"""The one decode path for text and JSON that comes from outside: servers, registries, files, child processes.

Whatever arrives, what leaves this module can be written anywhere: SQLite, PostgreSQL (which refuses NUL in text),
a UTF-8 file, a terminal. Three things are replaced by U+FFFD here and nowhere else:

* bytes that are not UTF-8 (:func:`decode_bytes`);
* lone surrogates, which JSON may escape (``"\\ud800"``) and Python decodes, but no UTF-8 writer accepts;
* NUL (U+0000), which JSON may escape (``"\\u0000"``) and PostgreSQL refuses in a text column.

Everything else stays exact, so a tool list's canonical hash does not change for lists without these. Escaping
for display (control and format characters) is :mod:`scanner.textsafe`'s job, on top of this.
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNWRITABLE = re.compile("[\x00\ud800-\udfff]")


def may_hold_unwritable(raw: bytes | str) -> bool:
    """Cheap gate: could JSON text ``raw`` decode to a lone surrogate or NUL (an escape or raw bytes)?"""
    if isinstance(raw, bytes):
        return b"\\ud" in raw or b"\\uD" in raw or b"\\u0000" in raw or b"\xed" in raw
    return ("\\ud" in raw or "\\uD" in raw or "\\u0000" in raw) or _UNWRITABLE.search(raw) is not None


def clean_str(text: str) -> str:
    """``text`` with lone surrogates and NUL replaced by U+FFFD (``text`` itself when it has neither)."""
    if text.isascii():  # only NUL can be there: two C-speed tests, not a regex search (most text is ASCII)
        return text.replace("\x00", "\ufffd") if "\x00" in text else text
    return _UNWRITABLE.sub("\ufffd", text) if _UNWRITABLE.search(text) else text


def sanitize(value: Any) -> Any:
    """``value`` (parsed JSON) with lone surrogates and NUL in every string, keys included, replaced by U+FFFD."""
    text = json.dumps(value, ensure_ascii=False)
    if _UNWRITABLE.search(text) is None and "\\u0000" not in text:
        return value
    return json.loads(_IN_DUMPED.sub(_replace_in_dumped, text))


# In text written by json.dumps(ensure_ascii=False): NUL appears as the escape \u0000, a lone surrogate raw. Escapes
# are matched as units so an escaped backslash followed by "u0000" (a literal "\\u0000" in a string) is kept.
_IN_DUMPED = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|[\ud800-\udfff]")


def _replace_in_dumped(match: re.Match[str]) -> str:
    found = match.group()
    return "\ufffd" if found == "\\u0000" or len(found) == 1 else found


def decode_bytes(data: bytes) -> str:
    """Bytes from outside as text: UTF-8 (a BOM dropped), anything else replaced, NUL replaced."""
    return clean_str(data.decode("utf-8-sig", "replace"))


def loads(raw: bytes | str) -> Any:
    """``json.loads`` whose result is safe to write anywhere (see the module docstring).

    Raises what ``json.loads`` raises (``ValueError``, ``RecursionError``); callers turn that into their own
    outcome or input error.
    """
    value = json.loads(raw)
    return sanitize(value) if may_hold_unwritable(raw) else value
