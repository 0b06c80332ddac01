"""A small corpus written through the real write path, and every read the product makes of it, as plain JSON.

:func:`build` writes five nights of a dozen servers with :func:`~scanner.store.Store.record_scan` under a fixed
clock (one instant per night): stable lists with nightly timings, a list that changes, failures and recoveries,
scans in two lanes with auth signals, instructions that change, registry findings (MCP7xx), secrets in URLs,
commands and details, hostile text (NUL, lone surrogates), a package install time, a rescore. :func:`dump` reads it
back through every query (``Store``'s, ``scanner.report.queries``', the health reads) into JSON-ready values, so a
change
to how rows are stored can be checked against the reads it must not change (``test_golden_reads.py``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scanner.errors import InputError
from scanner.models import Finding, Outcome, ScanOutcome, ServerEntry, Severity, Transport
from scanner.report import queries
from scanner.scan.lanes import combine
from scanner.store import Store, common, health
from tests.store.conftest import local_measure, tool

NIGHTS = 5
START = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
TOKEN = "sk-live-0123456789abcdef"  # an env/header value: never stored
SIGNALS_401 = {
    "status": 401,
    "challenge": {"scheme": "Bearer", "params": {"resource_metadata": "https://auth.example/.well-known/x"}},
    "resource_metadata": True,
    "issuers": ["https://auth.example"],
    "scopes_supported": ["read", "write"],
}


def _timings(night: int, seed: int) -> dict[str, float]:
    base = 10.0 + seed * 3.7 + night * 1.3
    return {"connect": round(base / 7, 1), "handshake": round(base * 2.1, 1), "list": round(base, 1), "total": 90.5}


def _ok(night: int, seed: int, tools: list[Any], **changes: Any) -> ScanOutcome:
    values: dict[str, Any] = {
        "outcome": Outcome.OK,
        "transport": "streamable-http",
        "detail": f"{len(tools)} tools",
        "tools": tuple(tools),
        "server_name": f"server-{seed}",
        "server_version": "1.0.0",
        "protocol_version": "2025-11-25",
        "era": "legacy",
        "capability_profile": "rich",
        "timings_ms": _timings(night, seed),
        "pages": 1,
        "extra": {"discover": "JSON-RPC error -32601", "delete_status": 200, "session": True},
    }
    values.update(changes)
    return ScanOutcome(**values)


def _entry(name: str, **changes: Any) -> ServerEntry:
    values: dict[str, Any] = {
        "name": name,
        "transport": Transport.STREAMABLE_HTTP,
        "url": f"https://{name}.example/mcp",
    }
    values.update(changes)
    return ServerEntry(**values)


def _registry_finding(code: str, message: str) -> Finding:
    return Finding(code, "registry-data", Severity.WARNING, None, message, "Fix the server.json.", "/packages/0", {})


_STABLE = [tool("search", query="string"), tool("fetch", url="string", depth="integer"), tool("ping", "Ping")]


def _night(night: int) -> Iterator[tuple[ServerEntry, ScanOutcome]]:
    """What the crawler hands the writer on ``night`` (0-based)."""
    yield _entry("io.example/stable"), _ok(night, 1, _STABLE)
    changing = [tool("search", query="string"), tool("export", fmt=None)]
    if night >= 2:
        changing = [tool("search", "Searches the index.", query="string", limit="integer"), tool("report")]
    yield _entry("io.example/changing"), _ok(night, 2, changing, server_version=f"1.{min(night, 3)}.0")
    if night in (1, 3):
        yield _entry("io.example/flaky"), ScanOutcome(Outcome.TIMEOUT, "streamable-http", "no answer within 10 s")
    else:
        yield _entry("io.example/flaky"), _ok(night, 3, _STABLE[:2])
    anonymous = ScanOutcome(Outcome.AUTH_REQUIRED, "streamable-http", "HTTP 401", extra={"status": 401})
    if night >= 3:
        anonymous = _ok(night, 4, [tool("search", query="string")])
    credentialed = _ok(night, 4, [tool("search", query="string"), tool("admin", "Deletes everything.")])
    yield (
        _entry("io.example/team", headers={"Authorization": f"Bearer {TOKEN}"}, credential_headers=("Authorization",)),
        combine(anonymous, credentialed, SIGNALS_401 if night < 3 else {"status": 200}),
    )
    instructions = "Use search first.\u0000 Results are English." if night < 2 else "Always call export after search."
    yield _entry("io.example/instructed"), _ok(night, 5, _STABLE, extra={"instructions": instructions, "session": True})
    findings = (_registry_finding("MCP701", "the package version is not pinned"),)
    if night == 4:
        findings += (_registry_finding("MCP703", "the repository URL is missing"),)
    yield _entry("io.example/registry", version="2.0.1", findings=findings), _ok(night, 6, _STABLE[1:])
    yield (
        _entry(
            "io.example/package",
            transport=Transport.STDIO,
            url=None,
            command=("npx", "-y", "@example/server@1.2.3", "--api-key", TOKEN, f"--token={TOKEN}"),
            env={"EXAMPLE_KEY": TOKEN},
            package={"registryType": "npm", "identifier": "@example/server", "version": "1.2.3", "pinned": True},
        ),
        _ok(
            night,
            7,
            _STABLE,
            transport="stdio",
            timings_ms={**_timings(night, 7), "install": 1500.0 + night},
            extra={"stderr_tail": [f"started with {TOKEN}", "ready"], "exit_code": None},
        ),
    )
    hostile = [tool("bad\u0000name", "Desc with a bidi \u202e mark and NUL \u0000.", q="string")]
    yield _entry("io.example/hostile"), _ok(night, 8, hostile, server_name="evil\u0000\ud83d", detail="x\u0000y")
    yield (
        _entry("io.example/secret-url", url=f"https://s.example/mcp?api_key={TOKEN}&x=1"),
        ScanOutcome(Outcome.HTTP_ERROR, "streamable-http", f"HTTP 500 from https://u:pw@s.example/?token={TOKEN}"),
    )
    yield _entry("io.example/empty"), _ok(night, 10, [], detail="0 tools", pages=night % 3)
    if night >= 1:  # a server that joins on the second night
        yield _entry("io.example/late"), _ok(night, 11, _STABLE[:1], timings_ms={"connect": 5, "list": 7})
    yield (
        _entry("io.example/skipped", skip="needs --run-packages"),
        ScanOutcome(Outcome.SKIPPED, "stdio", "needs --run-packages", extra={"not_run": True}),
    )
    yield _entry("io.example/stable"), _ok(night, 12, _STABLE[:1])  # a second result: writes nothing


def build(store: Store, monkeypatch: pytest.MonkeyPatch, *, batched: bool = False) -> list[int]:
    """Write the corpus into ``store`` (empty) and rescore it under catalogue ``9``; the run ids, oldest first.
    ``batched`` hands each night to :meth:`Store.record_scans` in one call, as the crawler's writer does."""
    runs = []
    for night in range(NIGHTS):
        moment = START + timedelta(days=night)
        monkeypatch.setattr(common, "now", lambda moment=moment: moment)
        run = store.start_run("registry.json", "3", {"concurrency": 8, "headers": {"X": "y"}})
        if batched:
            records = store.record_scans(run, list(_night(night)), local_measure)
        else:
            records = [store.record_scan(run, entry, outcome, local_measure) for entry, outcome in _night(night)]
        assert [record.duplicate for record in records].count(True) == 1
        store.finish_run(run, "interrupted" if night == 2 else "finished")
        runs.append(run)
    monkeypatch.setattr(common, "now", lambda: START + timedelta(days=NIGHTS))
    store.rescore("9", local_measure)
    return runs


def plain(value: Any) -> Any:
    """``value`` (rows, dataclasses, enums, datetimes, mappings, sequences) as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, float):
        return {"float": repr(value)}  # 5.0 and 5 must stay apart
    return value


def _said(read: Callable[[], Any]) -> Any:
    """What ``read`` returns, or the one line it refuses with (a diff of a server with one scan)."""
    try:
        return read()
    except InputError as refused:
        return {"refused": str(refused)}


def dump(store: Store, url: str, runs: list[int]) -> dict[str, Any]:
    """Every read of the corpus: the store's queries, the CLI's JSON queries, the health reads."""
    names = sorted(summary.name for summary in store.servers())
    shas = sorted({row.toolset_sha256 for row in store.servers() if row.toolset_sha256})
    reads: dict[str, Any] = {
        "runs": store.runs(),
        "servers": store.servers(),
        "histories": store.histories(),
        "history_columns": store.history_columns(),
        "events": store.events(),
        "findings": store.findings(),
        "findings_open": store.findings(still_open=True),
        "trends": store.trends(include_interrupted=True),
        "stats": store.database_stats(),
        "leaderboards": {run: store.leaderboard(run) for run in runs},
        "rule_hits": {run: store.rule_hits(run) for run in runs},
        "census": {run: health.census_rows(store.engine, run, run - 1) for run in runs},
        "registry_findings": {run: health.run_findings(store.engine, run, "MCP7") for run in runs},
        "samples": list(health.scan_samples(store.engine, START)),
        "toolsets": store.toolsets_tools(shas),
        "toolset_costs": store.toolsets_costs(shas),
        "toolset_tokens": {sha: store.toolset_tokens(sha) for sha in shas},
        "toolset_findings": {sha: store.toolset_findings(sha, "9") for sha in shas},
        "queries_runs": queries.runs(url),
        "queries_servers": queries.servers(url),
    }
    for name in names:
        reads[f"history {name}"] = store.history(name)
        reads[f"diff {name}"] = _said(lambda name=name: store.diff(name))
        reads[f"diff {name} first-last"] = _said(lambda name=name: store.diff(name, runs[0], runs[-1]))
        reads[f"queries history {name}"] = queries.history(url, name)
        reads[f"queries diff {name}"] = _said(lambda name=name: queries.diff(url, name, None, None))
        reads[f"scan_scores {name}"] = store.scan_scores(row.scan_id for row in store.history(name))
    return plain(reads)
