"""Making server-written text safe to show: control characters as visible escapes, slugs, escaping per format.

Everything a server sends (names, descriptions, details, serverInfo) is untrusted. Escaping for the output format
(HTML by Jinja's autoescape, XML here, Markdown here, CSV formulas in ``csv_out``) stops it from running; this
module also stops it from *hiding*: C0/C1 control characters, Unicode format characters (bidi overrides and
isolates, zero-width characters, tag characters) and line/paragraph separators are replaced by a visible
``\\u202e``-style escape, so a reader sees that they are there instead of having the text reordered under them.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import unicodedata
from typing import Any

# Categories replaced by an escape: control, format (bidi, zero-width, tags), surrogate, line/para separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SLUG_UNSAFE = re.compile(r"[^a-z0-9_-]+")
SLUG_MAX = 60
DEFAULT_LIMIT = 4000


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@functools.cache
def _hidden_pattern(keep_newlines: bool) -> re.Pattern[str]:
    """One character class of every hidden code point, built once from ``unicodedata`` (about 0.2 s).

    A regular expression over the whole text is ~50x faster than asking for each character's category, which
    matters on a site with thousands of pages of pretty-printed tool lists.
    """
    ranges: list[str] = []
    start = None
    for code in range(sys.maxunicode + 2):
        hidden = code <= sys.maxunicode and unicodedata.category(chr(code)) in _HIDDEN_CATEGORIES
        if keep_newlines and code in (0x09, 0x0A):
            hidden = False
        if hidden and start is None:
            start = code
        elif not hidden and start is not None:
            ranges.append(f"\\U{start:08x}-\\U{code - 1:08x}")
            start = None
    return re.compile("[" + "".join(ranges) + "]")


_ASCII_HIDDEN = re.compile("[\x00-\x1f\x7f]")  # category Cc within ASCII
_ASCII_KEEP_NEWLINES = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # the same but tab and newline


def _escape_match(match: re.Match[str]) -> str:
    return _escape_char(match.group())


def clean_text(value: Any, *, limit: int | None = DEFAULT_LIMIT, keep_newlines: bool = False) -> str:
    """``value`` as a string a person can read safely: hidden characters escaped, capped at ``limit`` chars.

    Non-strings (a name that is a list, a number) are shown as their ``repr``-free ``str``; ``None`` is empty.
    With ``keep_newlines``, ``\\n`` and ``\\t`` stay (for ``<pre>`` blocks); otherwise they are escaped too.
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    if text.isascii():
        # The only hidden ASCII characters are the C0 controls and DEL: a small class, scanned ~20x faster than
        # the whole-Unicode one (a site's pretty-printed tool lists are tens of MB of mostly ASCII text).
        ascii_hidden = _ASCII_KEEP_NEWLINES if keep_newlines else _ASCII_HIDDEN
        return text if ascii_hidden.search(text) is None else ascii_hidden.sub(_escape_match, text)
    # Printable text has no hidden characters (``str.isprintable`` is false for every hidden category).
    if (text.replace("\n", " ").replace("\t", " ") if keep_newlines else text).isprintable():
        return text
    return _hidden_pattern(keep_newlines).sub(_escape_match, text)


def xml_escape(text: str) -> str:
    """Escape for XML/HTML text and attribute values (both quote kinds)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


# Backslash, code, emphasis, link brackets, table pipes, strikethrough: the syntax that can act mid-line.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def markdown_escape(value: Any, *, limit: int | None = DEFAULT_LIMIT) -> str:
    """Text safe inside a Markdown table cell: no raw HTML, no links or emphasis, no cell breaks.

    HTML-significant characters become entities (Markdown renderers pass raw HTML through), Markdown syntax
    characters get a backslash (so ``[x](javascript:…)`` cannot become a link), newlines become spaces.
    """
    text = clean_text(value, limit=limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def slugify(name: Any) -> str:
    """A safe, stable file name for a server: lowercase ``[a-z0-9_-]``, plus a short hash unless already safe.

    A name that is its own slug keeps it; any other name gets ``-`` and 8 hex digits of its SHA-256, so two names
    that fold to the same letters (``Foo/Bar`` and ``foo.bar``) never share a page, and the slug of a name is the
    same in every run, whatever other servers exist.
    """
    text = name if isinstance(name, str) else str(name)
    base = _SLUG_UNSAFE.sub("-", text.lower()).strip("-_")[:SLUG_MAX].strip("-_")
    if base == text and base:
        return base
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base}-{digest}" if base else f"server-{digest}"
