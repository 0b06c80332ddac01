"""Badges: the shields.io endpoint JSON and the static SVG say the same thing, coloured by score."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from scanner.report.badge import badge_message, badge_svg, shields_endpoint


def test_endpoint_json_follows_the_shields_schema() -> None:
    assert shields_endpoint(92.54, 1234) == {
        "schemaVersion": 1,
        "label": "fathom",
        "message": "92.5 · 1.2k tokens",
        "color": "brightgreen",
    }
    assert shields_endpoint(None, None)["message"] == "not ranked"
    assert shields_endpoint(None, None)["color"] == "lightgrey"
    assert [shields_endpoint(score, 1)["color"] for score in (100, 80, 60, 30, 5)] == [
        "brightgreen",
        "green",
        "yellow",
        "orange",
        "red",
    ]
    json.dumps(shields_endpoint(50.0, 10))  # plain JSON values only


def test_static_svg_is_well_formed_and_says_the_message() -> None:
    svg = badge_svg(57.8, 23_456)
    root = ET.fromstring(svg)
    texts = [text.text for text in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["fathom", "57.8 · 23.5k tokens"]
    assert badge_message(57.8, None) == "57.8" and badge_message(1.0, 2_500_000) == "1.0 · 2.5M tokens"
    assert "script" not in svg and "href" not in svg
