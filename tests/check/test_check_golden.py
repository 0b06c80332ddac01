"""``measure`` over a small, varied corpus compared whole with a recorded file: a faster ``measure`` must give
byte-for-byte the same findings, token counts, costs and report fields (issue #24, "change no outcome").

The corpus is ``tests/check_corpus.py`` (demo servers, saved real lists, rule fixtures, hostile lists). After a
deliberate change of outputs (a new ``RULES_VERSION``, a recalibrated provider), rewrite the file with
``FATHOM_UPDATE_SNAPSHOTS=1 pytest tests/check/test_check_golden.py`` and read the diff before committing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.check_corpus import outputs

GOLDEN = Path(__file__).parents[1] / "fixtures" / "check" / "golden.json"


def _lines(measured: dict[str, object]) -> str:
    """One line per list, so a diff of the file names the lists that changed."""
    lines = (f"{json.dumps(label)}: {json.dumps(value, sort_keys=True)}" for label, value in measured.items())
    return "{\n" + ",\n".join(lines) + "\n}\n"


@pytest.fixture(scope="module")
def measured() -> dict[str, object]:
    result: dict[str, object] = json.loads(json.dumps(outputs()))
    if os.environ.get("FATHOM_UPDATE_SNAPSHOTS") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(_lines(result), encoding="utf-8")
    return result


def test_the_corpus_is_broad(measured: dict[str, object]) -> None:
    families = {label.split("/")[0] for label in measured}
    assert families >= {"demo", "synthetic", "real", "rules", "hostile"}


def test_every_list_measures_as_recorded(measured: dict[str, object]) -> None:
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert list(measured) == list(recorded)
    changed = [label for label in recorded if measured[label] != recorded[label]]
    assert not changed, f"measure changed its output for {changed}"
