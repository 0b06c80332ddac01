"""Every stored row, ids and clock readings included, against a golden digest written before issue #24's batched
first-night writes.

``test_golden_reads.py`` pins what every read gives back; this pins what is stored: each table's rows in id order,
every column (JSON as its stored text, a toolset's compressed bytes as their hash, each timestamp as the store's
clock gave it), so a write path that inserts in another order, reads the clock in another order, or encodes a
value otherwise fails here. The store's clock ticks one second per reading. The nights are the golden corpus's
(:mod:`tests.store.corpus`) and a first night of new servers (shared lists and instructions, failures, registry
findings, hostile text, the real lists of ``tests/fixtures/real``), written one server at a time and in batches
of the sizes the crawl hands over. A deliberate change to the corpus or the schema rewrites the digests with
``FATHOM_UPDATE_GOLDEN=1`` (review it); a difference names the table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, Column, Text, cast, select

from scanner.models import Finding, Outcome, ScanOutcome, ServerEntry, Severity, Transport
from scanner.store import Store, common, open_store
from tests.store import corpus
from tests.store.conftest import local_measure, tool
from tests.store.test_lanes_store import db_url  # noqa: F401 (the fixture: SQLite, and PostgreSQL when set)

GOLDEN = Path(__file__).parent / "golden" / "corpus_rows.json"
REAL = Path(__file__).parent.parent / "fixtures" / "real"
SHARED_INSTRUCTIONS = "Call search before fetch.\u0000 Shared by two new servers."


class _Clock:
    """The store's clock: one second per reading, from the night's start."""

    def __init__(self) -> None:
        self.at = corpus.START

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _real_lists() -> list[tuple[str, list[Any]]]:
    return [
        (path.stem, json.loads(path.read_text(encoding="utf-8"))["tools"])
        for path in sorted(REAL.glob("*.json"))
        if path.stem not in ("manifest", "labels")
    ]


def _new_servers(night: int) -> Iterator[tuple[ServerEntry, ScanOutcome]]:
    """New servers of every kind a first night brings (and, on ``night`` 1, some of them again, changed)."""
    for index, (name, tools) in enumerate(_real_lists()):
        entry = ServerEntry(name=f"real/{name}", transport=Transport.STREAMABLE_HTTP, url=f"https://{name}.test/mcp")
        if (index + night) % 7 == 0:
            yield entry, ScanOutcome(Outcome.TIMEOUT, "streamable-http", "no answer within 10 s")
            continue
        shown = tools if night == 0 or index % 3 else tools[:-1]
        extra: dict[str, Any] = {"session": True, "delete_status": 200}
        if index % 4 == 1:
            extra["instructions"] = SHARED_INSTRUCTIONS if index % 8 == 1 else f"Instructions of {name}."
        findings = (
            (Finding("MCP701", "registry-data", Severity.WARNING, None, "unpinned", "Pin it.", "/packages/0", {}),)
            if index % 5 == 2
            else ()
        )
        yield (
            dataclasses.replace(entry, findings=findings),
            corpus._ok(night, index, shown, server_name=f"{name}\u0000", extra=extra),
        )
    for copy in range(3):  # three new servers listing one new list
        yield (
            ServerEntry(name=f"copy/{copy}", transport=Transport.STREAMABLE_HTTP, url=f"https://c{copy}.test/mcp"),
            corpus._ok(night, 40 + copy, [tool("shared", query="string"), tool("other", fmt=None)]),
        )


def _nights() -> list[list[tuple[ServerEntry, ScanOutcome]]]:
    nights = [list(corpus._night(night)) for night in range(corpus.NIGHTS)]
    nights[0] += list(_new_servers(0))
    nights[1] += list(_new_servers(1))
    return nights


def _write(store: Store, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """The nights written ``batch`` results per call (0: ``record_scan`` one at a time), then rescored."""
    clock = _Clock()
    monkeypatch.setattr(common, "now", clock)
    for night, results in enumerate(_nights()):
        clock.at = corpus.START + timedelta(days=night)
        run = store.start_run("registry.json", "3", {"concurrency": 8})
        if batch:
            for start in range(0, len(results), batch):
                store.record_scans(run, results[start : start + batch], local_measure)
        else:
            for entry, outcome in results:
                store.record_scan(run, entry, outcome, local_measure)
        store.finish_run(run, "interrupted" if night == 2 else "finished")
    clock.at = corpus.START + timedelta(days=corpus.NIGHTS)
    store.rescore("9", local_measure)


def _stored(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, bytes | memoryview):
        return hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, float):
        return {"float": repr(value)}
    return value


def _as_stored(column: Column[Any]) -> Any:
    """A JSON column (plain or keyed) as the text the database keeps; any other column as it reads."""
    kind = column.type
    is_json = isinstance(kind, JSON) or isinstance(getattr(kind, "impl", None), JSON)
    return cast(column, Text) if is_json else column


def rows(store: Store) -> dict[str, list[list[Any]]]:
    """Every table's rows in primary-key order, JSON columns as their stored text; a measurement's basis as whether
    it is this process's (its value is a digest of tables other work changes: the client rows, the tokenizers)."""
    from scanner.measure.basis import measure_basis

    dumped: dict[str, list[list[Any]]] = {}
    with store.engine.connect() as connection:
        for name, table in sorted(common.TABLES.items()):
            query = select(*map(_as_stored, table.columns)).order_by(*table.primary_key.columns)
            basis = [column.name for column in table.columns].index("basis") if name == "measurements" else None
            dumped[name] = [
                [
                    ("this basis" if value == measure_basis() else value) if place == basis else _stored(value)
                    for place, value in enumerate(row)
                ]
                for row in connection.execute(query)
            ]
    return dumped


def digests(dumped: dict[str, list[list[Any]]]) -> dict[str, str]:
    return {
        name: f"{len(table)} rows {hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()}"
        for name, table in dumped.items()
    }


@pytest.mark.parametrize("batch", [0, 1, 7, 64], ids=["one-by-one", "batch-1", "batch-7", "batch-64"])
def test_every_stored_row_is_what_it_was(
    db_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
) -> None:
    with open_store(db_url) as store:
        _write(store, monkeypatch, batch)
        found = digests(rows(store))
    if os.environ.get("FATHOM_UPDATE_GOLDEN") == "1" and db_url.startswith("sqlite") and not batch:
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert found == expected, [name for name in expected if expected[name] != found.get(name)]


def test_the_golden_rows_see_a_changed_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest is of every value: one finding's details changed is a different ``findings`` digest only."""
    with open_store(f"sqlite:///{tmp_path / 'f.db'}") as store:
        _write(store, monkeypatch, 64)
        before = digests(rows(store))
        with store.engine.begin() as connection:
            first = connection.execute(select(common.FINDINGS.c.id).limit(1)).scalar_one()
            connection.execute(
                common.FINDINGS.update().where(common.FINDINGS.c.id == first).values(details={"changed": 1})
            )
        after = digests(rows(store))
    assert [name for name in before if before[name] != after[name]] == ["findings"]
