"""Chart legends: no two labels overlap, however long a provider's name (the Claude generation's label is long)."""

from __future__ import annotations

import itertools

from scanner.models import PROVIDER_LABELS
from scanner.report.svg import LEGEND_CHAR, LEGEND_SLOT, _legend_places


def _spans(legend: list[str]) -> list[tuple[int, float, float]]:
    return [
        (row, slot * LEGEND_SLOT, slot * LEGEND_SLOT + 14 + len(name) * LEGEND_CHAR)
        for name, (slot, row) in zip(legend, _legend_places(legend), strict=True)
    ]


def test_provider_labels_never_overlap() -> None:
    legend = list(PROVIDER_LABELS.values())
    spans = _spans(legend)
    for (row_a, _, end_a), (row_b, start_b, _) in itertools.pairwise(spans):
        assert row_b > row_a or start_b >= end_a, (legend, spans)


def test_short_labels_keep_four_to_a_row() -> None:
    assert _legend_places(["problems", "warnings", "notes", "ok", "timeout"]) == [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (0, 1),
    ]


def test_a_label_longer_than_a_row_takes_its_own_row() -> None:
    places = _legend_places(["ok", "x" * 200, "timeout"])
    assert places == [(0, 0), (0, 1), (0, 2)]
