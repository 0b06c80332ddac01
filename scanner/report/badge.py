"""Badges for a server's README: a static SVG and a shields.io endpoint JSON, from its score and tokens.

Both show the same message, ``92.5 · 1.2k tokens`` (score 0-100 under the current score version, and the tool
list's tokens per turn with the dearest provider), coloured by score; a server that is not ranked reads
``not ranked``. The SVG is self-contained (no fonts, scripts or links), so it displays from any host and under
the site's Content-Security-Policy. The JSON follows https://shields.io/badges/endpoint-badge (``schemaVersion``
1, ``label``, ``message``, ``color``).
"""

from __future__ import annotations

from scanner.report.text import xml_escape

LABEL = "fathom"
CHAR_WIDTH = 6.6  # px of an 11 px sans-serif character, for sizing only
# (lowest score, shields.io colour name, hex for the static SVG), first match wins.
COLOURS: tuple[tuple[float, str, str], ...] = (
    (90.0, "brightgreen", "#4c1"),
    (75.0, "green", "#97ca00"),
    (50.0, "yellow", "#dfb317"),
    (25.0, "orange", "#fe7d37"),
    (0.0, "red", "#e05d44"),
)
UNRANKED = ("lightgrey", "#9f9f9f")


def _tokens_text(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.1f}k"
    return str(tokens)


def badge_message(score: float | None, tokens: int | None) -> str:
    """``92.5 · 1.2k tokens``; ``not ranked`` without a score; the score alone without tokens."""
    if score is None:
        return "not ranked"
    text = f"{score:.1f}"
    return text if tokens is None else f"{text} · {_tokens_text(max(0, int(tokens)))} tokens"


def _colour(score: float | None) -> tuple[str, str]:
    if score is None:
        return UNRANKED
    for lowest, name, hex_value in COLOURS:
        if score >= lowest:
            return name, hex_value
    return COLOURS[-1][1], COLOURS[-1][2]


def shields_endpoint(score: float | None, tokens: int | None) -> dict[str, object]:
    """The shields.io endpoint JSON for a server (serve it as a file; shields.io renders it)."""
    return {"schemaVersion": 1, "label": LABEL, "message": badge_message(score, tokens), "color": _colour(score)[0]}


def badge_svg(score: float | None, tokens: int | None) -> str:
    """A static flat badge, ``fathom | 92.5 · 1.2k tokens``, coloured by score."""
    message = badge_message(score, tokens)
    left = round(len(LABEL) * CHAR_WIDTH + 12)
    right = round(len(message) * CHAR_WIDTH + 12)
    width = left + right
    colour = _colour(score)[1]
    title = xml_escape(f"{LABEL}: {message}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{left / 2:g}" y="14">{xml_escape(LABEL)}</text>'
        f'<text x="{left + right / 2:g}" y="14">{xml_escape(message)}</text>'
        "</g></svg>\n"
    )
