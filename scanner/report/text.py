"""Making server-written text safe to show: control characters as visible escapes, slugs, escaping per format.

Everything a server sends (names, descriptions, details, serverInfo) is untrusted. Escaping for the output format
(HTML by Jinja's autoescape, XML here, Markdown here, CSV formulas in ``csv_out``) stops it from running; this
module also stops it from *hiding*, through :mod:`scanner.textsafe`: control characters, format characters (bidi
overrides and isolates, zero-width characters, tag characters) and line/paragraph separators become a visible
``\\u202e``-style escape, so a reader sees that they are there instead of having the text reordered under them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from scanner.textsafe import clean_text

__all__ = ["DEFAULT_LIMIT", "clean_text", "markdown_escape", "slugify", "xml_escape"]

_SLUG_UNSAFE = re.compile(r"[^a-z0-9_-]+")
SLUG_MAX = 60
DEFAULT_LIMIT = 4000  # characters of one server-written string a report shows, unless the caller says otherwise


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


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 tool``, ``2 tools`` (``words`` for an irregular plural)."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


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
