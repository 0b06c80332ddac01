"""Making server-written text safe to show: control characters as visible escapes, slugs, escaping per format.

Everything a server sends (names, descriptions, details, serverInfo) is untrusted. Escaping for the output format
(HTML by Jinja's autoescape, XML here, Markdown here, CSV formulas in ``csv_out``) stops it from running; this
module also stops it from *hiding*: C0/C1 control characters, Unicode format characters (bidi overrides and
isolates, zero-width characters, tag characters) and line/paragraph separators are replaced by a visible
``\\u202e``-style escape, so a reader sees that they are there instead of having the text reordered under them.
"""

from __future__ import annotations

import hashlib
import re
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
    if text.isascii() and text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        if keep_newlines and char in "\n\t":
            out.append(char)
        elif unicodedata.category(char) in _HIDDEN_CATEGORIES:
            out.append(_escape_char(char))
        else:
            out.append(char)
    return "".join(out)


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
