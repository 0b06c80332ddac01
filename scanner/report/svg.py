"""Hand-written SVG charts for the report site: line charts and stacked bar charts, no JavaScript, no assets.

Each chart is one self-contained ``<svg role="img">`` string with a ``<title>`` and ``<desc>`` (read by screen
readers), a visible title, axes with tick labels, and a legend. Colours are presentation attributes, never
``style=`` attributes, so the site's Content-Security-Policy (``style-src 'self'``) has nothing to block.

Every text that reaches the SVG (titles, labels, series names, which may come from a server) is XML-escaped and
stripped of control characters here; callers pass plain strings. Long series (a year of nightly runs) are drawn
as one polyline per series, so the size grows with the points, not with any per-point markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import cast

from scanner.report.text import DEFAULT_LIMIT, clean_text, xml_escape

PALETTE: tuple[str, ...] = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")

WIDTH = 900
HEIGHT = 320
LEFT = 64
RIGHT = 48
TOP = 36
BOTTOM = 64
MAX_X_TICKS = 8
FONT = 12  # px at the viewBox's own size; the stylesheet never shows a chart narrower than its legible width
LABEL_GAP = 15  # px between two direct labels at the end of the lines
# Later series are dashed, so a line drawn over an equal one still shows both colours.
DASHES: tuple[str, ...] = ("", "7 4", "2 3", "10 3 2 3")
PANEL_WIDTH = 360
PANEL_HEIGHT = 210


@dataclass(frozen=True)
class Box:
    """A chart's size and margins (``right`` holds the direct labels of the lines)."""

    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = RIGHT
    top: int = TOP
    bottom: int = BOTTOM

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom


MAIN = Box(right=190)
PANEL = Box(width=PANEL_WIDTH, height=PANEL_HEIGHT, left=48, right=40, top=30, bottom=40)
NARROW = Box(width=400, height=340, left=52, right=16, top=52, bottom=70)
"""A chart for a phone: legible at 390 px without scrolling; its lines are named in the legend, not at their ends."""
TITLE_CHAR = 7.8  # px a character of the 14 px bold title takes, at most (for wrapping only)


@dataclass(frozen=True)
class Series:
    """One named line (or bar segment) of values, one per x label; None is a gap (e.g. a run with no scan)."""

    name: str
    values: tuple[float | None, ...]


def _esc(text: str) -> str:
    return xml_escape(clean_text(text, limit=DEFAULT_LIMIT))


def _nice_step(rough: float, integer: bool) -> float:
    """The smallest 1/2/5 x 10^n step at least ``rough`` (a whole number for counts)."""
    exponent = math.floor(math.log10(rough))
    step = 10.0 ** (exponent + 1)
    for factor in (1, 2, 5, 10):
        candidate = factor * 10.0**exponent
        if candidate >= rough:
            step = candidate
            break
    return max(1.0, math.ceil(step)) if integer else step


def _nice_axis(value: float, *, integer: bool = True) -> tuple[float, int]:
    """The top of the y axis and its number of equal steps (4 or 5, each 1/2/5 x 10^n, whole for counts): the
    lowest top that reaches ``value``, so 10 servers get an axis to 10 (5 steps of 2), not to 20."""
    if value <= 0 or not math.isfinite(value):
        return (4.0 if integer else 1.0), 4
    choices = [(_nice_step(value / steps, integer) * steps, steps) for steps in (4, 5)]
    return min(choices, key=lambda choice: (choice[0], choice[1] != 4))


def _fmt(value: float, percent: bool, scale: float | None = None) -> str:
    """A value as a chart says it: ``12%``, ``2.5k``, ``1.2M``. ``scale`` (an axis's top) puts every tick of
    one axis in one unit, so an axis never mixes ``5000`` and ``10k``."""
    if percent:
        return f"{value * 100:.0f}%"
    top = value if scale is None else scale
    if value == 0:
        return "0"
    if top >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if top >= 10_000 and (scale is not None or value >= 10_000):
        return f"{value / 1000:g}k"
    return f"{value:g}"


LEGEND_SLOT = 160  # px a legend entry takes; a longer label takes more slots, four slots a row
LEGEND_CHAR = 6.5  # px a character of the legend's 11 px sans-serif takes, at most (for laying out only)


def _legend_places(legend: Sequence[str], slots: int = 4) -> list[tuple[int, int]]:
    """(slot, row) of each legend entry: four slots a row, a label too long for one slot taking as many as it
    needs, so no two labels overlap (``Anthropic (Claude Opus 4.7+ tokenizer)`` is two)."""
    places: list[tuple[int, int]] = []
    slot = row = 0
    for name in legend:
        needs = max(1, min(slots, math.ceil((14 + len(name) * LEGEND_CHAR + 10) / LEGEND_SLOT)))
        if slot + needs > slots:
            slot, row = 0, row + 1
        places.append((slot, row))
        slot += needs
    return places


def _title_lines(title: str, width: int) -> list[str]:
    """The title on one line, or two when it is wider than the chart (a phone's); the second is cut if need be."""
    fits = max(8, int((width - 16) // TITLE_CHAR))
    if len(title) <= fits:
        return [title]
    cut = title.rfind(" ", 0, fits + 1)
    first, rest = (title[:cut], title[cut + 1 :]) if cut > 0 else (title[:fits], title[fits:])
    return [first, rest if len(rest) <= fits else rest[: fits - 1] + "…"]


def _frame(title: str, desc: str, body: list[str], legend: Sequence[str], box: Box = MAIN) -> str:
    # The legend grows downwards, so many series never overlap the axis labels.
    slots = max(1, int((box.width - box.left) // LEGEND_SLOT))
    places = _legend_places(legend, slots)
    height = box.height + 14 * (places[-1][1] if places else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {box.width} {height}" '
        f'width="{box.width}" height="{height}" class="chart" font-family="sans-serif" font-size="{FONT}">',
        f"<title>{_esc(title)}</title>",
        f"<desc>{_esc(desc)}</desc>",
    ]
    for line, text in enumerate(_title_lines(title, box.width)):
        parts.append(
            f'<text x="{box.width / 2:g}" y="{18 + 16 * line}" text-anchor="middle" font-size="14" '
            f'font-weight="bold">{_esc(text)}</text>'
        )
    parts.extend(body)
    for index, (name, (slot, row)) in enumerate(zip(legend, places, strict=True)):
        x = box.left + slot * LEGEND_SLOT
        y = box.height - 22 + row * 14
        colour = PALETTE[index % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{y - 8}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{y + 1}">{_esc(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _tick_every(labels: Sequence[str], plot_w: float) -> int:
    """Show every n-th x label, so that no two drawn labels overlap (each as wide as the longest)."""
    count = len(labels)
    if not count:
        return 1
    widest = max(len(label) for label in labels) * LEGEND_CHAR + 10
    fits = max(1, min(MAX_X_TICKS, int(plot_w // widest)))
    return max(1, math.ceil(count / fits))


def _axes(
    x_labels: Sequence[str],
    y_max: float,
    y_label: str,
    percent: bool,
    slot: float,
    centred: bool,
    box: Box = MAIN,
    steps: int = 4,
) -> list[str]:
    plot_w, plot_h = box.plot_w, box.plot_h
    left, top = box.left, box.top
    base = top + plot_h
    out = [
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#333"/>',
        f'<line x1="{left}" y1="{base}" x2="{left + plot_w:g}" y2="{base}" stroke="#333"/>',
        f'<text x="14" y="{top + plot_h / 2:g}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:g})">{_esc(y_label)}</text>',
    ]
    for step in range(steps + 1):
        value = y_max * step / steps
        y = base - plot_h * step / steps
        out.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left + plot_w:g}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(value, percent, y_max)}</text>')
    count = len(x_labels)
    if count:
        every = _tick_every(x_labels, plot_w)
        for index in range(0, count, every):
            x = left + slot * index + (slot / 2 if centred else 0)
            out.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#333"/>')
            out.append(f'<text x="{x:.1f}" y="{base + 20}" text-anchor="middle">{_esc(x_labels[index])}</text>')
    return out


def _segments(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Runs of drawable (position, value) points split at gaps, without the middle of any flat stretch.

    A year of an unchanged list draws as two points instead of 365: the line looks the same, and a site of
    thousands of charts stays small and fast to write.
    """
    segments: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    position = 0
    # A stretch of equal values keeps its first and last point; grouping runs in C, so a year of a flat
    # history costs one step, not 365.
    for value, group in groupby(values):
        run = list(group)
        if value is None or not math.isfinite(value):
            if current:
                segments.append(current)
            current = []
        else:
            finite = cast("list[float]", run)  # every member equals a finite number, so none is None
            current.append((position, finite[0]))
            if len(finite) > 1:
                current.append((position + len(finite) - 1, finite[-1]))
        position += len(run)
    if current:
        segments.append(current)
    return segments


def line_chart(
    title: str,
    x_labels: Sequence[str],
    series: Sequence[Series],
    *,
    y_label: str = "",
    percent: bool = False,
    desc: str = "",
    box: Box = MAIN,
    direct_labels: bool = True,
    legend: bool = True,
) -> str:
    """A line chart of ``series`` over ``x_labels`` (e.g. run dates); a single point is drawn as a dot.

    Each line is named at its end (``direct_labels``), lines ending on the same value sharing one label, so a
    line hidden under an equal one is still named; later series are dashed, so both colours show where they meet.
    """
    count = len(x_labels)
    drawn = [_segments(line.values[:count]) for line in series]
    if all(len(line.values) <= count for line in series):
        # The segments hold every distinct value of each flat stretch, so their maximum is the series'.
        peak = max((v for segments in drawn for segment in segments for _, v in segment), default=0.0)
    else:
        peak = max((v for s in series for v in s.values if v is not None and math.isfinite(v)), default=0.0)
    y_max, steps = (1.0, 4) if percent and peak <= 1 else _nice_axis(peak)
    if not direct_labels and box is MAIN:
        box = Box()
    plot_w, plot_h = box.plot_w, box.plot_h
    slot = plot_w / max(1, count - 1)
    body = _axes(x_labels, y_max, y_label, percent, slot, centred=False, box=box, steps=steps)
    if count == 0 or not series:
        body.append(f'<text x="{box.width / 2:g}" y="{box.height / 2:g}" text-anchor="middle">No data yet</text>')
    ends: dict[float, list[int]] = {}
    for index, segments in enumerate(drawn):
        colour = PALETTE[index % len(PALETTE)]
        dash = DASHES[index % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        for segment in segments:
            coords = [
                f"{box.left + (slot * position if count > 1 else plot_w / 2):.1f},"
                f"{box.top + plot_h - plot_h * max(0.0, value) / y_max:.1f}"
                for position, value in segment
            ]
            if len(coords) == 1:
                cx, cy = coords[0].split(",")
                body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>')
            else:
                body.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dashed} points="{" ".join(coords)}"/>'
                )
        if segments:
            ends.setdefault(segments[-1][-1][1], []).append(index)
    if direct_labels and series:
        body.extend(_end_labels(ends, series, y_max, box, percent))
    return _frame(title, desc or title, body, [s.name for s in series] if legend else [], box)


def _end_labels(
    ends: dict[float, list[int]], series: Sequence[Series], y_max: float, box: Box, percent: bool
) -> list[str]:
    """The names at the right end of the lines, one label per end value, pushed apart so none overlap."""
    placed: list[tuple[float, str, str]] = []
    for value, members in sorted(ends.items(), key=lambda item: -item[0]):
        y = box.top + box.plot_h - box.plot_h * max(0.0, value) / y_max + 4
        names = " = ".join(series[index].name for index in members)
        limit = max(4, int((box.right - 8) // LEGEND_CHAR))
        shown = f": {_fmt(value, percent)}"
        if len(names) + len(shown) > limit:  # the name is cut, never the value
            names = names[: max(1, limit - len(shown) - 1)] + "…"
        placed.append((y, names + shown, PALETTE[members[0] % len(PALETTE)]))
    # Push labels apart downwards, then keep the lowest above the x axis's labels, pushing the others up.
    ys = [y for y, _, _ in placed]
    for index in range(1, len(ys)):
        ys[index] = max(ys[index], ys[index - 1] + LABEL_GAP)
    lowest = box.top + box.plot_h
    for index in range(len(ys) - 1, -1, -1):
        ys[index] = min(ys[index], lowest if index == len(ys) - 1 else ys[index + 1] - LABEL_GAP)
    return [
        f'<text x="{box.width - box.right + 6:g}" y="{y:.1f}" fill="{colour}">{_esc(text)}</text>'
        for y, (_, text, colour) in zip(ys, placed, strict=True)
    ]


def small_multiples(
    title: str, x_labels: Sequence[str], series: Sequence[Series], *, y_label: str = "", percent: bool = False
) -> list[str]:
    """One small chart per series, each on its own scale and titled with its name: every series is visible
    however close the others are, and a series ten times smaller is not flattened against the axis."""
    return [
        line_chart(
            line.name,
            x_labels,
            [line],
            y_label=y_label,
            percent=percent,
            desc=f"{title}: {line.name}",
            box=PANEL,
            direct_labels=False,
            legend=False,
        )
        for line in series
    ]


def needs_own_scales(series: Sequence[Series], ratio: float = 10.0) -> bool:
    """True when the largest values of two series differ by ``ratio`` or more (one would look flat)."""
    peaks = [max((v for v in line.values if v is not None and math.isfinite(v)), default=0.0) for line in series]
    positive = [peak for peak in peaks if peak > 0]
    return len(positive) > 1 and max(positive) >= ratio * min(positive)


def stacked_bar_chart(
    title: str,
    x_labels: Sequence[str],
    series: Sequence[Series],
    *,
    y_label: str = "",
    desc: str = "",
    box: Box = Box(),  # a frozen dataclass: one shared default is safe
) -> str:
    """Bars over ``x_labels``, each stacked from ``series`` (e.g. outcomes by kind per run)."""
    count = len(x_labels)
    totals = [sum((s.values[i] or 0.0) for s in series if i < len(s.values)) for i in range(count)]
    y_max, steps = _nice_axis(max(totals, default=0.0))
    plot_w, plot_h = box.plot_w, box.plot_h
    slot = plot_w / max(1, count)
    bar_w = max(0.5, slot * 0.8)
    body = _axes(x_labels, y_max, y_label, False, slot, centred=True, box=box, steps=steps)
    if count == 0 or not series:
        body.append(f'<text x="{box.width / 2:g}" y="{box.height / 2:g}" text-anchor="middle">No data yet</text>')
    base = box.top + plot_h
    for index, bar in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        # One <path> per series keeps a year of bars small: each bar is a rectangle sub-path.
        path: list[str] = []
        for position in range(count):
            value = bar.values[position] if position < len(bar.values) else None
            if not value or value <= 0:
                continue
            below = sum((series[j].values[position] or 0.0) for j in range(index) if position < len(series[j].values))
            y_top = base - plot_h * (below + value) / y_max
            height = plot_h * value / y_max
            x = box.left + slot * position + (slot - bar_w) / 2
            path.append(f"M{x:.1f} {y_top:.1f}h{bar_w:.1f}v{height:.1f}h{-bar_w:.1f}z")
        if path:
            body.append(f'<path fill="{colour}" d="{"".join(path)}"/>')
    return _frame(title, desc or title, body, [s.name for s in series], box)
