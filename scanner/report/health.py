"""The registry as a whole, and each server over time: pure shaping of rows the store reads (``scanner.store.health``).

- :func:`census`: one run counted the way registry censuses count (docs/outcomes.md): entries by census class and
  by registry type, failures by whose they are (the server's or package's own, this host's, Fathom's own
  budgets', a mirror's: :func:`scanner.report.census.fault`; only the server's count as broken), the hosting platforms
  with the most entries and their broken share, data faults by rule (MCP7xx), what changed since the run
  compared with (newly published, delisted, newly broken, recovered), and the tools listed in all. Every number
  is a list of server names, so a page can link each number to its rows.
- :func:`server_health`: per server, uptime (the share of its measured scheduled scans that listed tools, over the
  last 7 and 30 days) and handshake + list latency p50/p95 (nearest rank) over the last 30 days.

A scan that was not measured (``rate_limited``, ``skipped``, ``refused``, ``delisted``, ``deprecated``) is left out
of uptime: a 429 storm or a delisting says nothing about whether the server works.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from scanner.report.census import CENSUS_CLASSES, FAULTS, UNMEASURED, census_class, fault, is_broken
from scanner.report.preview import visible
from scanner.store.health import CensusRow, ScanSample

WINDOWS_DAYS = (7, 30)
TOP_PLATFORMS = 15
# Hosting platforms whose customers each get a subdomain: the platform is the suffix, not the customer's name.
PLATFORM_SUFFIXES = (
    "vercel.app",
    "netlify.app",
    "workers.dev",
    "pages.dev",
    "onrender.com",
    "fly.dev",
    "herokuapp.com",
    "up.railway.app",
    "railway.app",
    "run.app",
    "azurewebsites.net",
    "azurecontainerapps.io",
    "amazonaws.com",
    "cloudfront.net",
    "smithery.ai",
    "github.io",
    "glama.ai",
    "deno.dev",
    "replit.app",
    "ngrok-free.app",
    "ngrok.app",
    "modal.run",
    "supabase.co",
    "appspot.com",
)


def platform(url: str | None, registry_type: str | None = None) -> str:
    """Where an entry is hosted: a known platform's suffix (``vercel.app``), else the host's last two labels
    (``example.com``); a package is ``package:<registry type>``, an entry with neither ``(none)``."""
    if not url:
        return f"package:{registry_type}" if registry_type else "(none)"
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return "(invalid URL)"
    if not host:
        return "(invalid URL)"
    for suffix in PLATFORM_SUFFIXES:
        if host == suffix or host.endswith("." + suffix):
            return suffix
    labels = host.split(".")
    if all(label.isdigit() for label in labels):
        return "(IP address)"
    return ".".join(labels[-2:])


@dataclass(frozen=True)
class Platform:
    """One hosting platform: its entries and those of them that are broken (server names)."""

    name: str
    entries: tuple[str, ...]
    broken: tuple[str, ...]

    @property
    def broken_share(self) -> float:
        return len(self.broken) / len(self.entries) if self.entries else 0.0


@dataclass(frozen=True)
class Census:
    """One run of a registry, counted; every count is a tuple of server names (sorted)."""

    run_id: int
    previous_run_id: int | None
    entries: tuple[str, ...]
    by_class: Mapping[str, tuple[str, ...]]
    by_outcome: Mapping[str, tuple[str, ...]]
    by_type: Mapping[str, tuple[str, ...]]
    platforms: tuple[Platform, ...]
    faults: Mapping[str, tuple[str, ...]]
    published: tuple[str, ...]
    delisted: tuple[str, ...]
    newly_broken: tuple[str, ...]
    recovered: tuple[str, ...]
    tools: int
    tools_servers: tuple[str, ...]
    rows: Mapping[str, CensusRow] = field(default_factory=dict)
    # Failures by whose they are (scanner.report.census.FAULTS order): host, policy and mirror are not the server's.
    by_fault: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _entry_type(row: CensusRow) -> str:
    if row.registry_type:
        return row.registry_type
    return "remote" if row.url else "none"


def census(
    rows: Sequence[CensusRow],
    findings: Iterable[tuple[str, str]],
    *,
    run_id: int,
    previous_run_id: int | None,
    top_platforms: int = TOP_PLATFORMS,
) -> Census:
    """Count one run's rows (:func:`scanner.store.health.census_rows`) and its MCP7xx findings."""
    by_class: defaultdict[str, list[str]] = defaultdict(list)
    by_outcome: defaultdict[str, list[str]] = defaultdict(list)
    by_type: defaultdict[str, list[str]] = defaultdict(list)
    by_fault: defaultdict[str, list[str]] = defaultdict(list)
    hosts: defaultdict[str, list[CensusRow]] = defaultdict(list)
    published, delisted, newly_broken, recovered, tools_servers = [], [], [], [], []
    tools = 0
    for row in rows:
        by_class[census_class(row.outcome)].append(row.server)
        by_outcome[row.outcome].append(row.server)
        by_type[_entry_type(row)].append(row.server)
        if (whose := fault(row.outcome, row.detail)) is not None:
            by_fault[whose].append(row.server)
        if row.outcome not in UNMEASURED:
            hosts[platform(row.url, row.registry_type)].append(row)
        if row.first_seen_here and previous_run_id is not None:
            published.append(row.server)
        if row.outcome == "delisted" and row.previous_outcome != "delisted":
            delisted.append(row.server)
        before = row.previous_outcome
        if before is not None and before not in UNMEASURED and row.outcome not in UNMEASURED:
            if is_broken(row.outcome, row.detail) and not is_broken(before):
                newly_broken.append(row.server)
            elif row.outcome == "ok" and is_broken(before):
                recovered.append(row.server)
        if row.outcome == "ok" and row.tools_count is not None:
            tools += row.tools_count
            tools_servers.append(row.server)
    faults: defaultdict[str, list[str]] = defaultdict(list)
    for server, code in findings:
        if not visible(code):  # a preview rule's data faults only with --preview (scanner.report.preview)
            continue
        if server not in faults[code]:
            faults[code].append(server)
    ranked = sorted(hosts.items(), key=lambda item: (-len(item[1]), item[0]))[:top_platforms]
    platforms = tuple(
        Platform(
            name=name,
            entries=tuple(sorted(row.server for row in members)),
            broken=tuple(sorted(row.server for row in members if is_broken(row.outcome, row.detail))),
        )
        for name, members in ranked
    )
    order = [*CENSUS_CLASSES, "other"]
    return Census(
        run_id=run_id,
        previous_run_id=previous_run_id,
        entries=tuple(sorted(row.server for row in rows)),
        by_class={key: tuple(sorted(by_class[key])) for key in order if key in by_class},
        by_outcome={key: tuple(sorted(names)) for key, names in sorted(by_outcome.items())},
        by_type={key: tuple(sorted(names)) for key, names in sorted(by_type.items(), key=lambda i: (-len(i[1]), i[0]))},
        platforms=platforms,
        faults={code: tuple(sorted(names)) for code, names in sorted(faults.items())},
        published=tuple(sorted(published)),
        delisted=tuple(sorted(delisted)),
        newly_broken=tuple(sorted(newly_broken)),
        recovered=tuple(sorted(recovered)),
        tools=tools,
        tools_servers=tuple(sorted(tools_servers)),
        rows={row.server: row for row in rows},
        by_fault={key: tuple(sorted(by_fault[key])) for key in FAULTS if key in by_fault},
    )


@dataclass(frozen=True)
class Health:
    """One server's health over time (None where there is nothing to measure)."""

    uptime_7d: float | None
    uptime_30d: float | None
    scans_7d: int  # measured scheduled scans in the window (the uptime's denominator)
    scans_30d: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_samples: int

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "uptime_7d": self.uptime_7d,
            "uptime_30d": self.uptime_30d,
            "scans_7d": self.scans_7d,
            "scans_30d": self.scans_30d,
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "latency_samples": self.latency_samples,
        }


def nearest_rank(values: Sequence[float], percentile: float) -> float | None:
    """The nearest-rank percentile of ``values`` (the smallest value with at least ``percentile`` % at or below)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


def server_health(samples: Iterable[ScanSample], now: datetime) -> dict[str, Health]:
    """Uptime over 7 and 30 days and latency p50/p95 over 30 days, per server, from its stored scans."""
    week, month = now - timedelta(days=WINDOWS_DAYS[0]), now - timedelta(days=WINDOWS_DAYS[1])
    counts: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # ok 7d, all 7d, ok 30d, all 30d
    latencies: defaultdict[str, list[float]] = defaultdict(list)
    for sample in samples:
        if sample.at < month or sample.at > now:
            continue
        tally = counts[sample.server]
        if sample.outcome not in UNMEASURED:
            ok = sample.outcome == "ok"
            tally[2] += ok
            tally[3] += 1
            if sample.at >= week:
                tally[0] += ok
                tally[1] += 1
        if sample.latency_ms is not None:
            latencies[sample.server].append(sample.latency_ms)
    result = {}
    for server, (ok_7, all_7, ok_30, all_30) in counts.items():
        values = latencies.get(server, [])
        result[server] = Health(
            uptime_7d=ok_7 / all_7 if all_7 else None,
            uptime_30d=ok_30 / all_30 if all_30 else None,
            scans_7d=all_7,
            scans_30d=all_30,
            latency_p50_ms=nearest_rank(values, 50),
            latency_p95_ms=nearest_rank(values, 95),
            latency_samples=len(values),
        )
    return result
