"""A real SQLite database written through the store's write path: six servers over three runs, a fixed clock.

The story the tests check (run 1 → 2 → 3):

- ``alpha``: three clean tools every run.
- ``beta``: a tool with no description (MCP102, a problem) in runs 1 and 2; fixed in run 3, so it moves up.
- ``gamma.tools/search``: clean in run 1; in run 2 gains a tool with an untyped parameter (MCP205); stays.
- ``delta``: ok in runs 1 and 2, unreachable (connect_error) in run 3.
- ``epsilon``: answers 401 every run (auth_required).
- ``zeta``: first seen in run 2, with 45 tools (MCP305 tools-over-40), the first documenting a `ctx` its schema
  lacks (MCP218, a preview rule).

The store stamps rows with its own clock (``scanner.store.common.now``); the fixture replaces it with a fixed
one (run *n* happens on 2026-03-0*n*), so every rendered date, and so every snapshot, is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scanner.measure.toollist import measure
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.rules.registry import RULES_VERSION
from scanner.store import Store, open_store

FIXED_NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


class FixedClock:
    """A clock that starts where a test puts it and ticks one second per reading."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)

    def set(self, moment: datetime) -> None:
        self.at = moment

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def tool(name: Any, description: Any = None, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool with a described string parameter unless ``properties`` says otherwise."""
    props = (
        properties
        if properties is not None
        else {"query": {"type": "string", "description": "What to look for, e.g. a file name."}}
    )
    out: dict[str, Any] = {"name": name, "inputSchema": {"type": "object", "properties": props}}
    if description is not None:
        out["description"] = description
    return out


ALPHA = [
    tool("read_file", "Read a text file from the workspace and return its contents as UTF-8."),
    tool("list_dir", "List the entries of a workspace directory with their sizes and kinds."),
    tool("file_stat", "Return size, owner and modification time of one path without reading it."),
]
BETA_BROKEN = [tool("fetch_page"), tool("fetch_headers", "Request only the HTTP headers of a URL, without a body.")]
BETA_FIXED = [
    tool("fetch_page", "Download a web page and return its readable text, with links listed at the end."),
    BETA_BROKEN[1],
]
GAMMA_1 = [tool("search", "Search the public index for documents matching words, newest first.")]
GAMMA_2 = [*GAMMA_1, tool("suggest", "Propose completions for a partial query as the user types.", {"prefix": {}})]
DELTA = [tool("ping_host", "Send an ICMP echo to a host and report the round-trip time in milliseconds.")]
ZETA = [
    tool(f"op_{index:02d}", f"Operation number {index} of the zeta batch service, acting on record {index}.")
    for index in range(45)
]
ZETA[0]["description"] += "\nArgs:\n ctx: context"  # MCP218, a preview rule: a framework argument documented


def ok(tools: Sequence[Any], server_name: str = "demo", version: str = "1.0.0") -> ScanOutcome:
    return ScanOutcome(
        outcome=Outcome.OK,
        transport="streamable-http",
        tools=tuple(tools),
        server_name=server_name,
        server_version=version,
        protocol_version="2025-11-25",
        era="legacy",
        pages=1,
    )


def failed(outcome: Outcome, detail: str) -> ScanOutcome:
    return ScanOutcome(outcome=outcome, transport="streamable-http", detail=detail)


def entry(name: str) -> ServerEntry:
    return ServerEntry(name=name, transport=Transport.STREAMABLE_HTTP, url=f"https://{name.replace('/', '-')}.test/mcp")


RUNS: list[dict[str, ScanOutcome]] = [
    {
        "alpha": ok(ALPHA, "alpha-server"),
        "beta": ok(BETA_BROKEN, "beta-server"),
        "gamma.tools/search": ok(GAMMA_1, "gamma"),
        "delta": ok(DELTA, "delta"),
        "epsilon": failed(Outcome.AUTH_REQUIRED, "401 Bearer: sign in at https://auth.epsilon.test"),
    },
    {
        "alpha": ok(ALPHA, "alpha-server"),
        "beta": ok(BETA_BROKEN, "beta-server"),
        "gamma.tools/search": ok(GAMMA_2, "gamma", "1.1.0"),
        "delta": ok(DELTA, "delta"),
        "epsilon": failed(Outcome.AUTH_REQUIRED, "401 Bearer: sign in at https://auth.epsilon.test"),
        "zeta": ok(ZETA, "zeta"),
    },
    {
        "alpha": ok(ALPHA, "alpha-server"),
        "beta": ok(BETA_FIXED, "beta-server", "1.0.1"),
        "gamma.tools/search": ok(GAMMA_2, "gamma", "1.1.0"),
        "delta": failed(Outcome.CONNECT_ERROR, "connection refused"),
        "epsilon": failed(Outcome.AUTH_REQUIRED, "401 Bearer: sign in at https://auth.epsilon.test"),
        "zeta": ok(ZETA, "zeta"),
    },
]


def write_runs(store: Store, clock: FixedClock, runs: Sequence[dict[str, ScanOutcome]]) -> list[int]:
    """Write ``runs`` through the store's write path, run *n* on 2026-03-0*n* at 02:00 UTC."""
    ids = []
    for number, scans in enumerate(runs, 1):
        clock.set(datetime(2026, 3, number, 2, 0, tzinfo=UTC))
        run_id = store.start_run("tests/report fixture", RULES_VERSION, {"concurrency": 4})
        for name, outcome in scans.items():
            store.record_scan(run_id, entry(name), outcome, measure)
        store.finish_run(run_id)
        ids.append(run_id)
    return ids


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FixedClock:
    fixed = FixedClock()
    monkeypatch.setattr("scanner.store.common.now", fixed)
    return fixed


@pytest.fixture
def make_store(tmp_path: Path, clock: FixedClock) -> Iterator[Callable[[Sequence[dict[str, ScanOutcome]]], Store]]:
    """Build a fresh SQLite file from a list of runs; closed after the test."""
    opened: list[Store] = []

    def build(runs: Sequence[dict[str, ScanOutcome]]) -> Store:
        store = open_store(f"sqlite:///{tmp_path / f'fathom-{len(opened)}.db'}")
        opened.append(store)
        write_runs(store, clock, runs)
        return store

    yield build
    for store in opened:
        store.close()


@pytest.fixture
def story_store(make_store: Callable[[Sequence[dict[str, ScanOutcome]]], Store]) -> Store:
    return make_store(RUNS)
