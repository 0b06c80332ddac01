"""An unchanged list costs what fetching it costs: a rescan reuses the stored measurement of a list it has met
before (the same hash, the same catalogue version, the same measurement basis: tokenizers and client table) and
still records what changes every night; a new catalogue, a new basis or a ``rescore`` measure again, exactly
where they must.

Real parts: loopback MCP servers (the demo host, Streamable HTTP), ``run_scan`` as ``fathom scan`` runs it, a real
SQLite file. The real ``measure`` runs every time; the test only counts its calls.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

import scanner.measure.basis as basis
import scanner.measure.clients as clients
import scanner.measure.toollist as toollist
import scanner.rules
from scanner.demo.server import DemoHost, Site, synthetic_sites
from scanner.models import CheckReport, Toolset
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import ScanConfig, run_scan
from scanner.store import open_store

SERVERS = 5
INSTRUCTED = Site(
    name="instructed",
    version="2.0.0",
    tools=synthetic_sites(SERVERS + 1)[SERVERS].tools,
    instructions="Call action_0 before any other tool; it returns the record ids the others take.",
)


@pytest.fixture(scope="module")
def host() -> Iterator[DemoHost]:
    with DemoHost([*synthetic_sites(SERVERS), INSTRUCTED]) as running:
        yield running


class Counted:
    """The real ``measure``, counting the lists it is asked to measure."""

    def __init__(self) -> None:
        self.lists: list[str] = []

    def __call__(self, toolset: Toolset, **options: Any) -> CheckReport:
        self.lists.append(toolset.sha256)
        return real_measure(toolset, **options)


real_measure = toollist.measure


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    spy = Counted()
    monkeypatch.setattr(toollist, "measure", spy)  # the scan and the CLI import it when they run
    return spy


@pytest.fixture
def fresh_basis() -> Iterator[None]:
    """The basis computed again for the test's patched tables, and again after it."""
    basis.measure_basis.cache_clear()
    yield
    basis.measure_basis.cache_clear()


def scan(host: DemoHost, work: Path) -> dict[str, int]:
    listing = work / "servers.json"
    names = [*(f"s{n:05d}" for n in range(SERVERS)), INSTRUCTED.name]
    listing.write_text(
        json.dumps({"servers": [{"name": f"t/{name}", "url": host.url(name)} for name in names]}), encoding="utf-8"
    )
    crawl = CrawlSettings(concurrency=4, per_host=4, allow_private=True)
    summary = run_scan(ScanConfig(source=str(listing), db_url=f"sqlite:///{work / 'f.db'}", crawl=crawl))
    return summary.counts


def rows(work: Path, query: str) -> list[Any]:
    with open_store(f"sqlite:///{work / 'f.db'}") as store, store.engine.connect() as connection:
        return list(connection.execute(text(query)))


def test_an_unchanged_rescan_measures_nothing_and_records_the_night(
    host: DemoHost, tmp_path: Path, counted: Counted
) -> None:
    assert scan(host, tmp_path) == {"ok": SERVERS + 1}
    assert len(counted.lists) == SERVERS + 1 == len(set(counted.lists))  # every list once
    first_tokens = rows(tmp_path, "SELECT toolset_id, provider, tokens FROM toolset_tokens ORDER BY 1, 2")

    # What changes per night still changes: one server ships a new version of the same list.
    *same, bumped = synthetic_sites(SERVERS)
    host.set_sites([*same, dataclasses.replace(bumped, version="1.1.0"), INSTRUCTED])
    try:
        counted.lists.clear()
        assert scan(host, tmp_path) == {"ok": SERVERS + 1}
    finally:
        host.set_sites([*synthetic_sites(SERVERS), INSTRUCTED])
    assert counted.lists == []  # nothing measured again
    assert rows(tmp_path, "SELECT toolset_id, provider, tokens FROM toolset_tokens ORDER BY 1, 2") == first_tokens
    assert rows(tmp_path, "SELECT count(*) FROM measurements")[0][0] == SERVERS + 1

    scans = rows(
        tmp_path,
        "SELECT servers.name, scans.run_id, scans.outcome, scans.server_version, scans.timings, "
        "scans.instructions_id, scans.toolset_id FROM scans JOIN servers ON servers.id = scans.server_id "
        "ORDER BY servers.name, scans.run_id",
    )
    assert len(scans) == 2 * (SERVERS + 1)  # one row per server per night
    assert all(row.outcome == "ok" and row.timings for row in scans)  # each night's own latency
    by_name = {(row.name, row.run_id): row for row in scans}
    last = f"t/s{SERVERS - 1:05d}"
    assert (by_name[(last, 1)].server_version, by_name[(last, 2)].server_version) == ("1.0.0", "1.1.0")
    assert by_name[(last, 1)].toolset_id == by_name[(last, 2)].toolset_id
    assert by_name[("t/instructed", 2)].instructions_id is not None  # the instructions are recorded each night
    assert by_name[("t/instructed", 1)].instructions_id == by_name[("t/instructed", 2)].instructions_id
    events = rows(tmp_path, "SELECT kind FROM events WHERE run_id = 2")
    assert [event.kind for event in events] == ["server_version_changed"]


def test_a_new_catalogue_version_measures_every_list_again(
    host: DemoHost, tmp_path: Path, counted: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    current = scanner.rules.RULES_VERSION
    scan(host, tmp_path)
    first = sorted(counted.lists)
    counted.lists.clear()
    monkeypatch.setattr(scanner.rules, "RULES_VERSION", "catalogue-under-test")
    scan(host, tmp_path)
    assert sorted(counted.lists) == first  # each list once again, under the new catalogue
    versions = rows(tmp_path, "SELECT rule_version, count(*) FROM measurements GROUP BY 1 ORDER BY 1")
    assert [tuple(row) for row in versions] == [(current, SERVERS + 1), ("catalogue-under-test", SERVERS + 1)]

    counted.lists.clear()
    scan(host, tmp_path)
    assert counted.lists == []  # and reused under it from then on


def test_a_new_tokenizer_client_table_or_rule_measures_every_list_again(
    host: DemoHost, tmp_path: Path, counted: Counted, monkeypatch: pytest.MonkeyPatch, fresh_basis: None
) -> None:
    scan(host, tmp_path)
    first = sorted(counted.lists)
    stored = {row.basis for row in rows(tmp_path, "SELECT basis FROM measurements")}
    assert stored == {basis.measure_basis()}

    # A client row added (another branch's work, say): a new basis, though no constant was bumped by hand.
    extra = dataclasses.replace(clients.CLIENTS[-1], key="new-client", label="A new client")
    monkeypatch.setattr(clients, "CLIENTS", (*clients.CLIENTS, extra))
    basis.measure_basis.cache_clear()
    assert basis.measure_basis() not in stored
    counted.lists.clear()
    scan(host, tmp_path)
    assert sorted(counted.lists) == first
    assert {row.basis for row in rows(tmp_path, "SELECT basis FROM measurements")} == {basis.measure_basis()}

    # A tokenizer's version (what its method says, or TOKENS_VERSION for what it does not) does the same.
    monkeypatch.setattr(basis, "TOKENS_VERSION", "under-test")
    basis.measure_basis.cache_clear()
    counted.lists.clear()
    scan(host, tmp_path)
    assert sorted(counted.lists) == first
    counted.lists.clear()
    scan(host, tmp_path)
    assert counted.lists == []
    # A rule changed within its catalogue version (its text or its check): the catalogue's digest is in the basis.
    from scanner.rules import engine, registry

    catalogue = registry.RULES
    assert isinstance(catalogue, registry._Catalogue)
    original = catalogue._rules["MCP205"]
    catalogue._rules["MCP205"] = dataclasses.replace(original, hint="Type every parameter.")
    engine._chosen.cache_clear()  # the engine's rules per selection: the changed rule, then the original again
    try:
        basis.measure_basis.cache_clear()
        counted.lists.clear()
        scan(host, tmp_path)
        assert sorted(counted.lists) == first
    finally:
        catalogue._rules["MCP205"] = original
        engine._chosen.cache_clear()
    # Still one measurement per list and catalogue: a new basis replaces, it does not pile up.
    assert rows(tmp_path, "SELECT count(*) FROM measurements")[0][0] == SERVERS + 1


def test_rescore_measures_again_and_the_next_scan_reuses_what_it_wrote(
    host: DemoHost, tmp_path: Path, counted: Counted, monkeypatch: pytest.MonkeyPatch, fresh_basis: None
) -> None:
    scan(host, tmp_path)
    first = sorted(counted.lists)
    db = f"sqlite:///{tmp_path / 'f.db'}"

    # A rescore under a new catalogue measures every stored list; a scan under that catalogue then reuses them.
    counted.lists.clear()
    with open_store(db) as store:
        result = store.rescore_history("catalogue-under-test", toollist.measure)
    assert sorted(counted.lists) == first and result.measured == SERVERS + 1
    monkeypatch.setattr(scanner.rules, "RULES_VERSION", "catalogue-under-test")
    counted.lists.clear()
    scan(host, tmp_path)
    assert counted.lists == []

    # A new basis: a rescore measures again, finds the same, stamps it; the next scan reuses every list.
    monkeypatch.setattr(basis, "TOKENS_VERSION", "under-test")
    basis.measure_basis.cache_clear()
    counted.lists.clear()
    with open_store(db) as store:
        dry = store.rescore_history("catalogue-under-test", toollist.measure, dry_run=True)
    assert not dry.anything and sorted(counted.lists) == first
    assert {row.basis for row in rows(tmp_path, "SELECT basis FROM measurements")} != {basis.measure_basis()}
    with open_store(db) as store:
        done = store.rescore_history("catalogue-under-test", toollist.measure)
    assert not done.anything  # nothing a user sees changed
    assert {
        row.basis
        for row in rows(tmp_path, "SELECT basis FROM measurements WHERE rule_version = 'catalogue-under-test'")
    } == {basis.measure_basis()}
    counted.lists.clear()
    scan(host, tmp_path)
    assert counted.lists == []


def test_the_basis_is_stable_and_builds_no_tokenizer(fresh_basis: None) -> None:
    from scanner.measure import tokenizer

    built = tokenizer._encoding is not None
    first = basis.measure_basis()
    basis.measure_basis.cache_clear()
    assert basis.measure_basis() == first and first.startswith(f"t{basis.TOKENS_VERSION}-")
    assert len(first) <= 64  # the column's width
    assert (tokenizer._encoding is not None) == built
