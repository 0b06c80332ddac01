"""The registry's view of clients (issue 43): for each client a verdict is given for, how many of the run's servers
it loads, drops tools of, or refuses, the reasons grouped by rule, and the same counts over every run (the trend).

:func:`clients_view` shapes it from the leaderboard (each ranked server's verdicts, as its row and page show them)
and the findings that decide verdicts (:func:`scanner.measure.verdicts.verdict_codes`) present in each run's
scans: a run's count is the verdict of each server scanned in it. The Clients
page (``clients.html``), ``health.json``'s ``clients`` object and their tests read it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scanner.measure.verdicts import REJECT_CLIENTS, Verdict, client_effects, verdict_codes, verdicts

if TYPE_CHECKING:
    from scanner.report.data import Leaderboard, TrendPoint
    from scanner.store import Store

MAX_NAMED = 25
"""Servers named per client and state on the page (the rest are counted: `fathom servers --client` lists all)."""


@dataclass(frozen=True)
class RuleCount:
    code: str
    slug: str
    servers: int


@dataclass(frozen=True)
class NamedServer:
    name: str
    slug: str
    verdict: str


@dataclass(frozen=True)
class ClientRow:
    """One client in one run: its counts, the rules behind them (servers per rule) and the first servers."""

    key: str
    label: str
    covers: str
    loads: int
    drops: int
    refuses: int
    rules: tuple[RuleCount, ...]
    refusing: tuple[NamedServer, ...]
    dropping: tuple[NamedServer, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "covers": self.covers,
            "loads": self.loads,
            "drops": self.drops,
            "refuses": self.refuses,
            "rules": {rule.code: rule.servers for rule in self.rules},
        }


@dataclass(frozen=True)
class ClientTrend:
    """One client over the runs of the trend: servers it drops tools of, and servers it refuses, per run."""

    key: str
    label: str
    drops: tuple[float, ...]
    refuses: tuple[float, ...]


@dataclass(frozen=True)
class ClientsView:
    run_id: int
    answered: int
    rows: tuple[ClientRow, ...]
    labels: tuple[str, ...]
    trends: tuple[ClientTrend, ...]

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "servers": self.answered, "by_client": {r.key: r.to_json() for r in self.rows}}


def counts(found: Iterable[Sequence[Verdict]]) -> dict[str, Counter[str]]:
    """Per client key, how many of these lists (each list's verdicts) it loads, drops tools of, or refuses."""
    out: dict[str, Counter[str]] = {client.key: Counter() for client in REJECT_CLIENTS}
    for list_verdicts in found:
        for verdict in list_verdicts:
            if verdict.client in out:
                out[verdict.client][verdict.state] += 1
    return out


def current_rows(board: Leaderboard) -> tuple[ClientRow, ...]:
    """Each client's counts over the run's ranked servers (those whose list was read), from their verdicts: one
    walk over the board's rows, keeping only counts and the first :data:`MAX_NAMED` names of each kind."""
    from scanner.rules import RULES

    answered = 0
    tally = counts(())
    by_rule: dict[str, Counter[str]] = {client.key: Counter() for client in REJECT_CLIENTS}
    named: dict[tuple[str, str], list[NamedServer]] = defaultdict(list)
    for row in board.ranked:
        if not row.verdicts:
            continue
        answered += 1
        judged: set[str] = set()  # a client's first verdict on the list is the one that names it
        for verdict in row.verdicts:
            if verdict.client not in tally:
                continue
            tally[verdict.client][verdict.state] += 1
            if verdict.client in judged or verdict.state == "loads":
                judged.add(verdict.client)
                continue
            judged.add(verdict.client)
            by_rule[verdict.client].update(set(verdict.codes))
            kind = "refuses" if verdict.state == "refuses" else "drops"
            if len(named[(verdict.client, kind)]) < MAX_NAMED:
                named[(verdict.client, kind)].append(NamedServer(row.name, row.slug, verdict.phrase()))
    out = []
    for client in REJECT_CLIENTS:
        rules = tuple(
            RuleCount(code, RULES[code].slug if code in RULES else "", servers)
            for code, servers in sorted(by_rule[client.key].items(), key=lambda item: (-item[1], item[0]))
        )
        out.append(
            ClientRow(
                key=client.key,
                label=client.label,
                covers=client.covers,
                loads=answered - tally[client.key]["drops"] - tally[client.key]["refuses"],
                drops=tally[client.key]["drops"],
                refuses=tally[client.key]["refuses"],
                rules=rules,
                refusing=tuple(named[(client.key, "refuses")]),
                dropping=tuple(named[(client.key, "drops")]),
            )
        )
    return tuple(out)


def findings_at(store: Store, *runs: int, names: Sequence[str] | None = None) -> dict[int, dict[str, list[Any]]]:
    """The findings that decide verdicts in these runs' scans (of the servers ``names`` only, when given; with
    their details: the history's rows keep none), by run and server; only those that name a client. Two queries
    whatever the number of servers or runs."""
    from scanner.store.health import verdict_findings

    out: dict[int, dict[str, list[Any]]] = {run: defaultdict(list) for run in runs}
    for row in verdict_findings(store.engine, runs, verdict_codes(), names):
        if client_effects(row):
            out[row.run_id][row.server].append(row)
    return out


def trend_of(store: Store, trends: Sequence[TrendPoint]) -> tuple[ClientTrend, ...]:
    """Per client, per run of ``trends``: servers it drops tools of and servers it refuses, from the findings
    present in that run's scans (read a run at a time)."""
    per_run = []
    for point in trends:  # one run's findings at a time: a year of nightly runs is never read at once
        found = findings_at(store, point.run_id)[point.run_id]
        per_run.append(counts(verdicts(rows) for rows in found.values()))
        del found
    return tuple(
        ClientTrend(
            key=client.key,
            label=client.label,
            drops=tuple(float(run[client.key]["drops"]) for run in per_run),
            refuses=tuple(float(run[client.key]["refuses"]) for run in per_run),
        )
        for client in REJECT_CLIENTS
    )


def clients_view(store: Store, board: Leaderboard, trends: Sequence[TrendPoint]) -> ClientsView:
    """The Clients page's data for the board's run, with the trend over ``trends``' runs."""
    return ClientsView(
        run_id=board.run_id,
        answered=len(board.ranked),
        rows=current_rows(board),
        labels=tuple(point.label for point in trends),
        trends=trend_of(store, trends),
    )
