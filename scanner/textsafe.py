"""Make text from a server safe to print in a terminal.

Tool names and descriptions are someone else's text. Control characters (an escape sequence can recolour, move
the cursor, retitle the window or hide lines) and invisible or direction-changing format characters never reach
the terminal raw: each is shown as a visible ``\\uXXXX`` escape, so a reader sees that something is there.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def clean(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with every control and format character escaped (newlines kept only if asked)."""
    value = text if isinstance(text, str) else str(text)
    if keep_newlines:
        return "\n".join(clean(line) for line in value.split("\n"))
    value = _UNSAFE.sub(lambda match: _escape(match.group()), value)
    if value.isascii():
        return value
    return "".join(_escape(char) if unicodedata.category(char) in ("Cf", "Co", "Cs") else char for char in value)
