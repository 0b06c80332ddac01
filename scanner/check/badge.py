"""The Fathom badge: a server's score and tokens per turn, as a flat SVG and as a shields.io endpoint JSON.

``fathom check --badge FILE`` writes both (``FILE`` the SVG, ``FILE`` with the suffix ``.json`` the endpoint
document for ``https://img.shields.io/endpoint?url=...``); the report site draws its badges with the same two
functions. The colour follows the score: 90 and up bright green, 75 green, 60 yellow, 40 orange, below red, and
grey when there is no score (a list with no tools says ``no tools``, in grey). Widths are estimated from character
counts (Verdana 11 px, as shields does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from scanner.errors import OutputError

if TYPE_CHECKING:
    from scanner.check.result import CheckResult

LABEL = "fathom"
_COLOURS = ((90.0, "brightgreen", "#4c1"), (75.0, "green", "#97ca00"), (60.0, "yellow", "#dfb317"))
_LOW = ((40.0, "orange", "#fe7d37"), (0.0, "red", "#e05d44"))
_NONE = ("lightgrey", "#9f9f9f")


def _colour(score: float | None) -> tuple[str, str]:
    if score is None:
        return _NONE
    for floor, name, hex_code in (*_COLOURS, *_LOW):
        if score >= floor:
            return name, hex_code
    return _LOW[-1][1], _LOW[-1][2]


def score_colour(score: float | None) -> str:
    """The colour name of a score's band (``brightgreen`` 90+, ``green`` 75+, ``yellow`` 60+, ``orange`` 40+,
    ``red``; ``lightgrey`` for no score): the badge's, and the leaderboard's score cells'."""
    return _colour(score)[0]


def _tokens(tokens: int) -> str:
    """``812``, ``2.7k``, ``81k``, ``1.2M``: short enough for a badge."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 10_000:
        return f"{tokens / 1000:.1f}k"
    if tokens < 1_000_000:
        return f"{tokens // 1000}k"
    return f"{tokens / 1_000_000:.1f}M"


NO_TOOLS = "no tools"


def message(score: float | None, tokens: int | None, *, no_tools: bool = False) -> str:
    """``93.5 · 2.7k tokens``; either part is left out when unknown, ``not ranked`` when both are (a server whose
    list was not read), ``no tools`` for a list that was read and is empty (it has no score)."""
    if no_tools:
        return NO_TOOLS
    parts = []
    if score is not None:
        parts.append(f"{score:.1f}")  # as the leaderboard shows it: 93.0, not 93
    if tokens is not None:
        parts.append(f"{_tokens(tokens)} tokens")
    return " · ".join(parts) if parts else "not ranked"


def shields_endpoint(score: float | None, tokens: int | None, *, no_tools: bool = False) -> dict[str, object]:
    """The shields.io endpoint document (schemaVersion 1); grey for a list with no tools."""
    text = message(score, tokens, no_tools=no_tools)
    return {"schemaVersion": 1, "label": LABEL, "message": text, "color": _colour(None if no_tools else score)[0]}


def _width(text: str) -> int:
    # Verdana 11 px averages about 7 px a character; shields pads each side by 5 px.
    return 10 + round(sum(4 if char in "il.,:;|!' " else 7 for char in text))


def badge_svg(score: float | None, tokens: int | None, *, no_tools: bool = False) -> str:
    """A flat badge: ``fathom | 93.5 · 2.7k tokens``, or a grey ``fathom | no tools``."""
    text = message(score, tokens, no_tools=no_tools)
    left, right = _width(LABEL), _width(text)
    total = left + right
    colour = _colour(None if no_tools else score)[1]
    label_x, text_x = left * 5, (left + right / 2) * 10
    title = escape(f"{LABEL}: {text}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<rect width="{total}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
        'text-rendering="geometricPrecision" font-size="110">'
        f'<text x="{label_x:g}" y="140" transform="scale(.1)">{escape(LABEL)}</text>'
        f'<text x="{text_x:g}" y="140" transform="scale(.1)">{escape(text)}</text></g></svg>\n'
    )


def endpoint_path(path: Path) -> Path:
    """Where the endpoint JSON goes beside the SVG ``path``: the same name with the suffix ``.json``."""
    return path.with_suffix(".json")


def write(path: Path, result: CheckResult) -> tuple[Path, Path]:
    """Write the SVG to ``path`` and the endpoint JSON beside it; the tokens are the most expensive provider's."""
    score = result.score.score if result.score is not None else None
    tokens = result.report.max_tokens if result.report is not None else None
    no_tools = result.report is not None and result.report.tools_count == 0
    endpoint = endpoint_path(path)
    if endpoint == path:
        raise OutputError(f"--badge {path}: give the SVG a name not ending in .json (the endpoint JSON goes there)")
    from scanner import safefile  # never through a symlink, inside the working tree (docs/ci.md)

    safefile.write_text(
        path, badge_svg(score, tokens, no_tools=no_tools), label="--badge", failed=f"cannot write the badge {path}"
    )
    endpoint_json = json.dumps(shields_endpoint(score, tokens, no_tools=no_tools), indent=2) + "\n"
    safefile.write_text(
        endpoint, endpoint_json, label="--badge's endpoint JSON", failed=f"cannot write the badge {endpoint}"
    )
    return path, endpoint
