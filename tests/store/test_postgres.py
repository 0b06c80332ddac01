"""PostgreSQL: the same migrations and the same answers as SQLite.

Runs only when ``FATHOM_TEST_POSTGRES_URL`` names an empty scratch database (its tables are dropped), e.g.
``postgresql+psycopg://fathom@127.0.0.1:54329/fathom_test``, and a driver is installed; skipped otherwise.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from scanner.models import Outcome
from scanner.store import Store, open_store
from scanner.store.engine import create_store_engine, downgrade, migrate
from scanner.store.tables import Base, described_here
from tests.store.conftest import entry, failed, local_measure, ok, tool

URL = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(not URL, reason="set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")

ECHO = tool("echo", "Echo the given text back, unchanged.", text="string")
ADD = tool("add", "Add two numbers and return the sum.", a="number", b="number")
SEARCH_UNTYPED = tool("search", "Search the index for documents.", query=None)
SEARCH = tool("search", "Search the index for documents.", query="string")
PLAN = [
    {"a": ok([ECHO, SEARCH_UNTYPED]), "b": ok([ADD]), "c": failed()},
    {"a": ok([ECHO, SEARCH]), "b": ok([ADD]), "c": ok([ECHO, ADD, SEARCH_UNTYPED])},
    {"a": ok([ECHO, SEARCH]), "b": ok([ECHO], version="2.0.0"), "c": failed(Outcome.AUTH_REQUIRED, "401")},
]


@pytest.fixture
def postgres() -> Iterator[str]:
    pytest.importorskip("psycopg")
    engine = create_store_engine(URL)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    yield URL


def _fill(store: Store) -> None:
    for number, scans in enumerate(PLAN, 1):
        run_id = store.start_run("list.txt", "1", {"round": number})
        for name, outcome in scans.items():
            store.record_scan(run_id, entry(name), outcome, local_measure)
        store.finish_run(run_id)


def _timeless(value: Any) -> Any:
    """Query results with timestamps blanked, so two backends' answers compare equal."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: None if "_at" in f.name or f.name in ("at", "first_seen") else _timeless(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, list | tuple):
        return [_timeless(item) for item in value]
    if isinstance(value, dict):
        return {key: _timeless(item) for key, item in value.items()}
    return value


def _answers(store: Store) -> dict[str, Any]:
    return {
        "runs": store.runs(),
        "servers": store.servers(),
        "history": [store.history(name) for name in "abc"],
        "findings": store.findings(),
        "findings_run2": store.findings(run=2),
        "diff": [store.diff("a", 1, 2), store.diff("b")],
        "events": store.events(),
        "leaderboard": [store.leaderboard(run) for run in (1, 2, 3)],
        "trends": store.trends(),
        "rule_hits": store.rule_hits(2),
    }


def test_postgres_migrates_both_ways_and_agrees_with_the_models(postgres: str) -> None:
    engine = create_store_engine(postgres)
    migrate(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_name": described_here})
        assert compare_metadata(context, Base.metadata) == []
    downgrade(engine, "base")
    migrate(engine)
    engine.dispose()


def test_postgres_gives_the_same_answers_as_sqlite(postgres: str, tmp_path: Path) -> None:
    lite = open_store(f"sqlite:///{tmp_path / 'f.db'}")
    pg = open_store(postgres)
    _fill(lite)
    _fill(pg)
    assert _timeless(_answers(pg)) == _timeless(_answers(lite))
    assert pg.rescore("2", local_measure) == lite.rescore("2", local_measure) == 5
    assert _timeless(pg.trends()) == _timeless(lite.trends())
    lite.close()
    pg.close()
