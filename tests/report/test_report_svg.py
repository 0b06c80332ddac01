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
