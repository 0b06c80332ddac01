"""The suite's own scheduling (tests/conftest.py): the longest files it starts first are files that exist."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import _LONGEST_FILES

ROOT = Path(__file__).resolve().parents[1]


def test_the_longest_files_started_first_exist_and_are_named_once() -> None:
    assert len(set(_LONGEST_FILES)) == len(_LONGEST_FILES)
    missing = [name for name in _LONGEST_FILES if not (ROOT / name).is_file()]
    assert not missing, f"tests/conftest.py names files that are gone: {missing}"
