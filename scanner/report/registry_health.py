"""The registry health page (``health.html``) and each server's health over time (``health.json``, ``health.csv``).

``build_report`` calls :func:`write_health` once, after the rest of the site: it reads the run's census and the
last 30 days of scans through :mod:`scanner.store.health`, shapes them with :mod:`scanner.report.health`, and writes
three files. Every number on the page links to the rows it counts (a list further down the page, each server
linking to its own page). Uptime windows end at the run's start, so a report of an old run is reproducible.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO, overload

from scanner.report.census import census_class, fault
from scanner.report.csv_out import csv_text
from scanner.report.data import Leaderboard
from scanner.report.health import WINDOWS_DAYS, Census, Health, census, server_health
from scanner.report.html import CSP, make_environment
from scanner.report.jsonout import StreamedList, write_safe_json
from scanner.report.preview import tag
from scanner.report.spool import names_and_slugs
from scanner.report.text import MAX_SERVER_NAME, clean_text
from scanner.rules.catalogue import rule_precision
from scanner.rules.registry import status_of
from scanner.store import health as reads

CLASS_LABELS = {
    "open": "Open: lists tools without a credential",
    "gated": "Gated: needs a credential",
    "payment": "Payment required (HTTP 402)",
    "not_mcp": "Answers, but not MCP",
    "unreachable": "Unreachable",
    "timeout": "Timed out",
    "jsonrpc_error": "JSON-RPC or protocol error",
    "unmeasured": "Not measured (rate limited, skipped, delisted)",
    "package": "Package did not answer",
    "other": "Other",
}
FAULT_LABELS = {
    "server": "The server's or package's own (counted broken)",
    "host": "This host's (a runner or Python missing or broken, the network to the index)",
    "policy": "Fathom's own budgets (--disk-limit-mb, --memory-limit-mb)",
    "mirror": "The package index mirror's (a package or version it lacks)",
}


@dataclass(frozen=True)
class Listing:
    """One list of servers a number on the page links to: its anchor, heading and names."""

    anchor: str
    title: str
    names: tuple[str, ...]


def _anchor(*parts: str) -> str:
    text = "-".join(parts).lower()
    return "".join(char if char.isalnum() or char == "-" else "-" for char in text)[:80]


LISTED_NAMES = 50
"""Names the health page lists under one number: a server counts under several numbers, and listing every one
under each made 60,000 items for 10,000 servers; the CSV and JSON keep every row."""


def listings(data: Census) -> list[Listing]:
    """Every list a number links to, in page order."""
    out = [Listing("entries", "Every entry", data.entries)]
    out.append(Listing("tools", "Servers whose tools are counted", data.tools_servers))
    out += [Listing(_anchor("class", key), CLASS_LABELS.get(key, key), names) for key, names in data.by_class.items()]
    out += [Listing(_anchor("outcome", key), f"Outcome {key}", names) for key, names in data.by_outcome.items()]
    out += [Listing(_anchor("type", key), f"Registry type {key}", names) for key, names in data.by_type.items()]
    out += [
        Listing(_anchor("fault", "of", key), f"Failures: {FAULT_LABELS[key]}", names)
        for key, names in data.by_fault.items()
    ]
    for index, item in enumerate(data.platforms):
        out.append(Listing(f"platform-{index}", f"Hosted on {item.name}", item.entries))
        out.append(Listing(f"platform-{index}-broken", f"Broken on {item.name}", item.broken))
    out += [
        Listing(_anchor("fault", code), f"{code} findings{tag(code)}", names) for code, names in data.faults.items()
    ]
    out += [
        Listing("published", "Newly published", data.published),
        Listing("delisted", "Delisted", data.delisted),
        Listing("newly-broken", "Newly broken", data.newly_broken),
        Listing("recovered", "Recovered", data.recovered),
    ]
    return out


class HealthRows(Sequence[dict[str, Any]]):
    """One row per server of the run (:func:`health_rows`), made each time they are walked rather than held: the
    page, ``health.json`` and ``health.csv`` each walk them once."""

    def __init__(self, data: Census, health: Mapping[str, Health]) -> None:
        self._data, self._health = data, health

    def __len__(self) -> int:
        return len(self._data.entries)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._row(name) for name in self._data.entries[index]]
        return self._row(self._data.entries[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(self._row, self._data.entries)

    def _row(self, name: str) -> dict[str, Any]:
        row = self._data.rows[name]
        return {
            "server": name,
            "outcome": row.outcome,
            "census_class": census_class(row.outcome),
            "fault": fault(row.outcome, row.detail),
            **self._health.get(name, _NO_HEALTH).to_json(),
        }


_NO_HEALTH = Health(None, None, 0, 0, None, None, 0)


def health_rows(data: Census, health: Mapping[str, Health]) -> HealthRows:
    """One row per server of the run: outcome, census class, and its health over time."""
    return HealthRows(data, health)


def write_health_json(
    data: Census, rows: Sequence[dict[str, Any]], stream: TextIO, clients: dict[str, Any] | None = None
) -> None:
    """``health.json``: the census's counts, one row per server (made as it is written) and the clients' view."""
    summary = {
        "run_id": data.run_id,
        "compared_with_run": data.previous_run_id,
        "entries": len(data.entries),
        "tools": data.tools,
        "by_class": {key: len(names) for key, names in data.by_class.items()},
        "by_outcome": {key: len(names) for key, names in data.by_outcome.items()},
        "by_type": {key: len(names) for key, names in data.by_type.items()},
        "by_fault": {key: len(names) for key, names in data.by_fault.items()},
        "platforms": [
            {"platform": item.name, "entries": len(item.entries), "broken": len(item.broken)} for item in data.platforms
        ],
        "faults": {code: len(names) for code, names in data.faults.items()},
        # Each fault's rule: its status (a preview rule is never scored or gated) and measured precision (0-1).
        "fault_rules": {code: {"status": status_of(code), "precision": rule_precision(code)} for code in data.faults},
        "published": list(data.published),
        "delisted": list(data.delisted),
        "newly_broken": list(data.newly_broken),
        "recovered": list(data.recovered),
    }
    # As leaderboard.json: ASCII only, HTML-significant characters escaped, safe to serve beside the pages.
    document: dict[str, Any] = {"census": summary, "servers": StreamedList(len(rows), lambda: iter(rows))}
    if clients is not None:
        document["clients"] = clients
    write_safe_json(document, stream)


def write_health_csv(rows: Iterable[dict[str, Any]], stream: TextIO) -> None:
    """``health.csv``, a row at a time, to ``stream`` (opened with ``newline=""``)."""
    writer = csv.writer(stream, lineterminator="\r\n")
    columns = ["server", "outcome", "census_class", "uptime_7d", "uptime_30d", "scans_7d", "scans_30d"]
    columns += ["latency_p50_ms", "latency_p95_ms", "latency_samples"]
    writer.writerow(columns)
    for row in rows:
        cells = [row[key] for key in columns]
        writer.writerow([csv_text(cell) if isinstance(cell, str) else ("" if cell is None else cell) for cell in cells])


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def run_health(engine: Any, board: Leaderboard) -> dict[str, Health]:
    """Uptime and latency of every server of the board's run, over the windows ending at the run's start."""
    names = {name for name, _ in names_and_slugs(board)}
    end = board.started_at
    return server_health(reads.scan_samples(engine, end - timedelta(days=WINDOWS_DAYS[-1]), names), end)


def write_health(
    engine: Any,
    board: Leaderboard,
    out_dir: Path,
    generated_at: Any,
    health: Mapping[str, Health] | None = None,
    clients: Any = None,
) -> list[Path]:
    """Write ``health.html``, ``health.json`` and ``health.csv`` for the board's run; return their paths.

    ``health`` is :func:`run_health` of the board when the caller already has it (the site's pages show it too):
    it reads the last 30 days of scans, 600 000 rows at 20 000 servers, so it is read once per report. ``clients``
    (scanner.report.clients_view.ClientsView) adds ``health.json``'s ``clients``: per client, the servers it loads,
    drops tools of and refuses, and the rules behind them."""
    # A name too long to show is a crafted row the leaderboard skipped (and said so): skipped here too.
    rows = [
        row
        for row in reads.census_rows(engine, board.run_id, board.previous_run_id)
        if len(row.server) <= MAX_SERVER_NAME
    ]
    data = census(
        rows,
        reads.run_findings(engine, board.run_id, "MCP7"),
        run_id=board.run_id,
        previous_run_id=board.previous_run_id,
    )
    table = health_rows(data, run_health(engine, board) if health is None else health)
    slugs = dict(names_and_slugs(board))
    env = make_environment()
    env.filters["ms"] = _ms
    page = env.get_template("health.html").generate(
        root="",
        board=board,
        generated_at=generated_at,
        csp=CSP,
        census=data,
        labels=CLASS_LABELS,
        fault_labels=FAULT_LABELS,
        listings=listings(data),
        listed=LISTED_NAMES,
        anchor=_anchor,
        slugs=slugs,
        rows=table,
        clean=clean_text,
    )
    view = clients.to_json() if clients is not None else None
    writers: tuple[tuple[str, Callable[[TextIO], None]], ...] = (
        ("health.html", lambda stream: stream.writelines(page)),
        ("health.json", lambda stream: write_health_json(data, table, stream, view)),
        ("health.csv", lambda stream: write_health_csv(table, stream)),
    )
    written = []
    for name, write in writers:  # each written as it is made: the page's table and the rows are never whole
        path = out_dir / name
        with path.open("w", encoding="utf-8", newline="") as stream:
            write(stream)
        written.append(path)
    return written
