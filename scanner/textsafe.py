"""Make text from a server safe to show: in a terminal, a table, a report page.

Tool names and descriptions are someone else's text. Control characters (an escape sequence can recolour, move
the cursor, retitle the window or hide lines), Unicode format characters (bidi overrides and isolates,
zero-width characters, tag characters), lone surrogates and line/paragraph separators never reach a reader raw:
each is shown as a visible ``\\uXXXX`` escape, so a reader sees that something is there instead of having the text
reordered or hidden under them. Escaping for an output format (HTML, Markdown, CSV) is the renderer's job on top.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Any

# Categories replaced by an escape: control, format (bidi, zero-width, tags), surrogate, line/para separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


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


def clean_text(value: Any, *, limit: int | None = None, keep_newlines: bool = False) -> str:
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


def clean(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with every hidden character escaped (newlines and tabs kept only if asked), never cut."""
    return clean_text(text, limit=None, keep_newlines=keep_newlines)


# --- Markdown ----------------------------------------------------------------------------------------------------

# Backslash, code, emphasis, link and image brackets, table pipes, strikethrough, math: the syntax that can act
# mid-line (what acts only at a line's start never gets there: a cell or a value is never a line of its own).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
# A zero-width space (as an entity) after "@", after every ":" before a "/" (a URL scheme's) and inside "www.":
# GitHub then neither notifies a user or team (@someone) nor turns a bare link or an e-mail address into a live
# one; the text reads the same once rendered. No word boundary is asked for: cmark-gfm links "ñhttps://x" too.
_ZWSP = "&#8203;"
_SCHEME = re.compile(r":(?=/)")
_WWW = re.compile(r"(?i)(www)\.")
_CODE_SPAN = re.compile(r"`[^`\n]+`")


def _markdown_plain(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    text = _MD_SPECIAL.sub(r"\\\1", text).replace("@", "@" + _ZWSP)
    return _WWW.sub(r"\1" + _ZWSP + ".", _SCHEME.sub(":" + _ZWSP, text))


def markdown_text(value: Any, *, limit: int | None = None, code_spans: bool = False) -> str:
    """``value`` safe inside any Markdown line or table cell: the one escaping of every Markdown output (``check
    --format markdown``, the Action's PR comment and step summary, ``leaderboard.md``, ``try``'s Markdown).

    Hidden characters and line breaks become visible escapes (:func:`clean_text`, so a cell never breaks its row),
    HTML-significant characters become entities (renderers pass raw HTML through), Markdown syntax gets a
    backslash (no link, image, emphasis, code or extra table column: ``|`` is ``\\|``), and ``@``, ``scheme:/``
    and ``www.`` get a zero-width space so GitHub pings no one and makes no bare link live. Capped at ``limit``.

    ``code_spans`` keeps backtick code spans of text Fathom wrote itself (a catalogue hint's `` `items` ``): their
    content is literal to a renderer, and only a ``|``, which GFM tables split on even there, is escaped. Never
    for a stranger's text.
    """
    text = clean_text(value, limit=limit)
    if not code_spans:
        return _markdown_plain(text)
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out += [_markdown_plain(text[last : span.start()]), span.group().replace("|", "\\|")]
        last = span.end()
    out.append(_markdown_plain(text[last:]))
    return "".join(out)
