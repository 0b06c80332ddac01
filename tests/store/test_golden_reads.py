"""Every read of a small corpus written through the real write path, against a golden file.

The store may change how it keeps a row (issue #24: compact JSON, fewer indexes, batched writes), never what any
read gives back: this builds :mod:`tests.store.corpus` (five nights: changes, failures, lanes, instructions,
registry findings, secrets, hostile text, a rescore) and compares every query's answer, value for value (``5.0``
is not ``5``), with ``golden/corpus_reads.json``, written by the code before that work. On PostgreSQL too when
``FATHOM_TEST_POSTGRES_URL`` is set. A deliberate change to the corpus or to a read rewrites the file with
``FATHOM_UPDATE_GOLDEN=1``; review its diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scanner.store import open_store
from tests.store import corpus
from tests.store.test_lanes_store import db_url  # noqa: F401 (the fixture: SQLite, and PostgreSQL when set)

GOLDEN = Path(__file__).parent / "golden" / "corpus_reads.json"


def _first_difference(expected: object, found: object, where: str = "") -> str:
    """Where two JSON values first differ, as a path, for a failure a person can read."""
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            if expected.get(key, "<missing>") != found.get(key, "<missing>"):
                return _first_difference(expected.get(key, "<missing>"), found.get(key, "<missing>"), f"{where}/{key}")
    if isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for index, (one, two) in enumerate(zip(expected, found, strict=True)):
            if one != two:
                return _first_difference(one, two, f"{where}/{index}")
    return f"{where}: expected {json.dumps(expected)[:300]}, found {json.dumps(found)[:300]}"


@pytest.mark.parametrize("batched", [False, True], ids=["one-by-one", "batched"])
def test_every_read_of_the_corpus_is_what_it_was(
    db_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    batched: bool,
) -> None:
    """Written one server at a time (``record_scan``) or a night at a time (``record_scans``, as the crawl's
    writer hands batches over), the corpus reads back the same."""
    with open_store(db_url) as store:
        runs = corpus.build(store, monkeypatch, batched=batched)
        reads = json.loads(json.dumps(corpus.dump(store, db_url, runs), sort_keys=True))
    if os.environ.get("FATHOM_UPDATE_GOLDEN") == "1" and db_url.startswith("sqlite") and not batched:
        GOLDEN.write_text(json.dumps(reads, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert reads == expected, _first_difference(expected, reads)
