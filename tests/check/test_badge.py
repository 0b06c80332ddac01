"""The badge: ``badge_svg`` and ``shields_endpoint`` (the API the report site draws its badges with)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from scanner.check.badge import badge_svg, message, shields_endpoint

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("score", "colour"),
    [
        (100.0, "brightgreen"),
        (90.0, "brightgreen"),
        (89.9, "green"),
        (75.0, "green"),
        (60.0, "yellow"),
        (59.9, "orange"),
        (40.0, "orange"),
        (39.9, "red"),
        (0.0, "red"),
        (None, "lightgrey"),
    ],
)
def test_colour_follows_the_score(score: float | None, colour: str) -> None:
    assert shields_endpoint(score, 1200)["color"] == colour


@pytest.mark.parametrize(
    ("score", "tokens", "text"),
    [
        (93.5, 812, "93.5 · 812 tokens"),
        (100.0, 2718, "100.0 · 2.7k tokens"),
        (77.7, 81_234, "77.7 · 81k tokens"),
        (12.0, 1_250_000, "12.0 · 1.2M tokens"),  # as the leaderboard writes it
        (None, 999, "999 tokens"),
        (50.0, None, "50.0"),
        (None, None, "not ranked"),
    ],
)
def test_message(score: float | None, tokens: int | None, text: str) -> None:
    assert message(score, tokens) == text
    assert shields_endpoint(score, tokens) == {
        "schemaVersion": 1,
        "label": "fathom",
        "message": text,
        "color": shields_endpoint(score, None)["color"],
    }


def test_svg_is_well_formed_escaped_and_sized_to_its_text() -> None:
    short, long = ET.fromstring(badge_svg(100.0, 5)), ET.fromstring(badge_svg(12.3, 1_250_000))
    assert [t.text for t in long.iter(f"{SVG}text")] == ["fathom", "12.3 · 1.2M tokens"]
    assert int(long.get("width", 0)) > int(short.get("width", 0)) > 0
    assert long.find(f"{SVG}title") is not None and "fathom: 12.3" in (long.find(f"{SVG}title").text or "")
    fills = {rect.get("fill") for rect in long.iter(f"{SVG}rect")}
    assert "#e05d44" in fills  # red for 12.3
