"""The report site built from the corpus is the same, byte for byte, whether the nights were written one server at a
time (``record_scan``) or a night at a time (``record_scans``, one transaction per batch): batching the writes may
change no id a page, a link or an export shows, and no order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.store import open_store
from tests.store import corpus

# A date and time: a page that differs between the two sites may differ only in those (its build time).
_STAMP = re.compile(rb"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z| UTC)?")


def _site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batched: bool) -> dict[str, bytes]:
    db = tmp_path / f"{batched}.db"
    with open_store(f"sqlite:///{db}") as store:
        corpus.build(store, monkeypatch, batched=batched)
    out = tmp_path / f"site-{batched}"
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return {str(path.relative_to(out)): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}


def test_the_site_of_a_batched_corpus_is_the_site_of_one_written_server_by_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_by_one, batched = _site(tmp_path, monkeypatch, False), _site(tmp_path, monkeypatch, True)
    assert sorted(one_by_one) == sorted(batched) and len(one_by_one) > 20
    stamped = [name for name in one_by_one if one_by_one[name] != batched[name]]
    for name in stamped:
        assert _STAMP.sub(b"<time>", one_by_one[name]) == _STAMP.sub(b"<time>", batched[name]), name
    assert len(stamped) < len(one_by_one)  # most files carry no build time: those are compared as they are
