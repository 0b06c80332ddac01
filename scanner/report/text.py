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
from collections.abc import Iterable
from typing import Any

from scanner.errors import InputError
from scanner.textsafe import clean_text, markdown_text

# The handshake era in plain words: the stored value says which handshake answered, not how good it is.
ERA_WORDS = {
    "legacy": "initialize handshake (MCP 2024-11-05 to 2025-11-25, what most clients speak today)",
    "stateless": "stateless server/discover (MCP 2026-07-28)",
}

__all__ = ["DEFAULT_LIMIT", "clean_text", "markdown_escape", "slugify", "unique_slugs", "xml_escape"]

_SLUG_UNSAFE = re.compile(r"[^a-z0-9_-]+")
SLUG_MAX = 60
DEFAULT_LIMIT = 4000  # characters of one server-written string a report shows, unless the caller says otherwise
MAX_SERVER_NAME = 1000  # a longer stored name (server.json's are cut at 200) is a crafted row: skipped, said once


def xml_escape(text: str) -> str:
    """Escape for XML/HTML text and attribute values (both quote kinds)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def markdown_escape(value: Any, *, limit: int | None = DEFAULT_LIMIT) -> str:
    """Text safe inside a Markdown table cell or line, capped at ``limit`` (the report's default): the ground
    floor's one Markdown escaping, :func:`scanner.textsafe.markdown_text` (no raw HTML, no link, image or
    emphasis, no extra column, no line break, no @mention or bare link GitHub would make live)."""
    return markdown_text(value, limit=limit)


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 tool``, ``2 tools`` (``words`` for an irregular plural)."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


# Windows device names: ``con.html`` (or ``con.anything``) opens the console, not a file, on every Windows.
RESERVED_NAMES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{digit}" for digit in range(1, 10)), *(f"lpt{digit}" for digit in range(1, 10))}
)
# What :func:`slugify` appends: a name already ending like that never keeps itself as its slug, so a server
# named ``acme-tool-b4c750b9`` cannot take the page of ``Acme/Tool``.
_HASHED_TAIL = re.compile(r"-[0-9a-f]{8,}$")


def is_reserved_name(name: str) -> bool:
    """Whether ``name`` is a Windows device name, in any case, with or without an extension (``CON``, ``nul.txt``)."""
    return name.split(".", 1)[0].rstrip(" ").lower() in RESERVED_NAMES


def slugify(name: Any, *, digits: int = 8) -> str:
    """A safe, stable file name for a server: lowercase ``[a-z0-9_-]``, plus a short hash unless already safe.

    A name that is its own slug keeps it; any other name gets ``-`` and ``digits`` hex digits of its SHA-256, so
    two names that fold to the same letters (``Foo/Bar`` and ``foo.bar``) never share a page, and the slug of a
    name is the same in every run, whatever other servers exist. A name never keeps itself when it ends the way a
    hashed slug ends (``-`` and 8 or more hex digits) or is a reserved device name (``con``, ``lpt1``): it is
    hashed too. Eight hex digits can still be matched on purpose; :func:`unique_slugs` settles that per build.
    """
    text = name if isinstance(name, str) else str(name)
    base = _SLUG_UNSAFE.sub("-", text.lower()).strip("-_")[:SLUG_MAX].strip("-_")
    if base == text and base and not _HASHED_TAIL.search(base) and not is_reserved_name(base):
        return base
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    return f"{base}-{digest}" if base else f"server-{digest}"


def unique_slugs(names: Iterable[Any]) -> dict[Any, str]:
    """Each name's slug for one report build, never two names on one page.

    Names whose short slugs collide (a crafted 32-bit hash match) all get the whole SHA-256 instead, so neither
    takes the other's page whichever comes first. Should even those collide, the build is refused rather than
    one page overwriting another.
    """
    slugs = {name: slugify(name) for name in names}
    groups: dict[str, list[Any]] = {}
    for name, slug in slugs.items():
        groups.setdefault(slug, []).append(name)
    for group in groups.values():
        if len(group) > 1:
            for name in group:
                slugs[name] = slugify(name, digits=64)
    seen: dict[str, Any] = {}
    for name, slug in slugs.items():
        if slug in seen:
            raise InputError(
                f"servers {clean_text(seen[slug], limit=80)!r} and {clean_text(name, limit=80)!r} would share the"
                f" page {slug}.html; the report refuses to overwrite one with the other"
            )
        seen[slug] = name
    return slugs
