"""The hand-written SVG charts: accessible, escaped, drawn to scale, small for long flat histories."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from scanner.report.svg import Series, line_chart, stacked_bar_chart

NS = "{http://www.w3.org/2000/svg}"


def test_line_chart_is_valid_accessible_svg_with_escaped_text() -> None:
    svg = line_chart(
        "Tokens <script>alert(1)</script>",
        ["2026-01-01", "2026-01-02", "2026-01-03"],
        [Series("a\u202e<b>", (10.0, None, 30.0)), Series("flat", (5.0, 5.0, 5.0))],
        y_label="tokens",
    )
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.get("role") == "img"
    assert root.find(f"{NS}title").text == "Tokens <script>alert(1)</script>"  # escaped in the source, text here
    assert "<script>" not in svg and "\u202e" not in svg and "\\u202e" in svg
    # The gap at None splits the first series into two single points (drawn as dots); the flat one is a line.
    assert len(root.findall(f"{NS}circle")) == 2
    polylines = root.findall(f"{NS}polyline")
    assert len(polylines) == 1 and len(polylines[0].get("points").split()) == 2
    # Axis labels: the y axis tops at a round number above 30, and every x label is shown.
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "40" in labels and "2026-01-02" in labels


def test_a_year_of_a_flat_line_is_two_points() -> None:
    svg = line_chart("t", [str(i) for i in range(365)], [Series("x", tuple([100.0] * 200 + [120.0] * 165))])
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert len(points) == 4
    assert len(svg) < 4000


def test_stacked_bars_stack_to_the_total() -> None:
    svg = stacked_bar_chart("Outcomes", ["r1", "r2"], [Series("ok", (3.0, 1.0)), Series("timeout", (1.0, 3.0))])
    root = ET.fromstring(svg)
    paths = root.findall(f"{NS}path")
    assert len(paths) == 2
    heights = [
        sum(float(h) for h in re.findall(r"v([0-9.]+)", path.get("d"))) for path in paths
    ]  # both series add up to the same height: 4 servers in each run
    assert abs(heights[0] - heights[1]) < 0.5


def test_empty_chart_says_so() -> None:
    assert "No data yet" in line_chart("t", [], [])


def test_equal_lines_are_all_named_at_their_end_and_dashed_apart() -> None:
    from scanner.report.svg import DASHES

    svg = line_chart(
        "Findings",
        ["r1", "r2"],
        [Series("problems", (0.0, 0.0)), Series("warnings", (0.0, 0.0)), Series("notes", (2.0, 1.0))],
    )
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{NS}text")]
    assert "problems = warnings: 0" in labels and "notes: 1" in labels
    dashes = [line.get("stroke-dasharray") for line in root.findall(f"{NS}polyline")]
    assert dashes == [None, DASHES[1], DASHES[2]]


def test_small_multiples_give_each_series_its_own_chart_and_scale() -> None:
    from scanner.report.svg import needs_own_scales, small_multiples

    series = [Series("median", (700.0, 720.0)), Series("p90", (23_000.0, 24_000.0))]
    assert needs_own_scales(series) and not needs_own_scales([Series("a", (10.0,)), Series("b", (50.0,))])
    panels = small_multiples("Tokens", ["r1", "r2"], series, y_label="tokens")
    assert len(panels) == 2
    tops = [
        max(
            float(t.text.rstrip("k")) * (1000 if t.text.endswith("k") else 1)
            for t in ET.fromstring(p).iter(f"{NS}text")
            if t.text and t.text.rstrip("k").replace(".", "").isdigit()
        )
        for p in panels
    ]
    assert tops[0] < 2000 < tops[1]  # the median is drawn on its own scale, not flat on zero


def test_x_labels_never_crowd() -> None:
    labels = [f"2026-03-{day:02d} 02:00" for day in range(1, 31)]
    root = ET.fromstring(line_chart("t", labels, [Series("x", tuple(float(i) for i in range(30)))]))
    shown = [t.text for t in root.iter(f"{NS}text") if t.text in labels]
    assert 2 <= len(shown) <= 8


def test_an_axis_says_its_ticks_in_one_unit() -> None:
    """Issue 46: an axis read 0, 2500, 5000, 7500, 10k: "5000" and "10k" on one axis."""
    svg = line_chart("Tokens", ["a", "b", "c"], [Series("x", (1200.0, 9000.0, 9800.0))], y_label="tokens")
    root = ET.fromstring(svg)
    ticks = [t.text for t in root.iter(f"{NS}text") if t.get("text-anchor") == "end" and t.text]
    numeric = [tick for tick in ticks if tick and tick[0].isdigit()]
    assert "10k" in numeric and "0" in numeric
    assert all(tick == "0" or tick.endswith("k") for tick in numeric), numeric
