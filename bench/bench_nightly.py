"""Benchmark (not a test): the whole nightly a registry runs, at registry scale, beside the same night at 2 000.

What it builds, all on 127.0.0.1, each in its own process so the measured steps' figures are their own:

- **MCP servers**: one host process (``scanner.demo.server.DemoHost``) serving every entry's server, one per path,
  each with a real tool list's shape and size (``tests/fixtures/real/*.json``, cycled; the first tool's description
  made the server's own so every list is distinct, as in a real registry), waiting ``--latency-ms`` before every
  answer (default 50 ms), and the failure mix in :data:`MIX` (402, 429, not MCP, 404, answers later than the
  deadline, bodies that never end, a 401 with its challenge, unresolvable ``*.invalid`` hosts, a closed port);
- **a registry API** (``bench_registry_scale.serve``: pages of 100 at ``/v0.1/servers``) of N entries built from
  the real December 2025 dump's latest rows (``bench_registry_scale.build_rows``: renamed copies, real shapes and
  proportions: descriptions, repositories, remote headers, ``_meta``), each entry's packages left out and its
  remote pointed at its loopback server.

Then, for 2 000 entries (``--small``) and for N (``--servers``, default 25 000), each step a child process whose
wall time, CPU (user + system, every thread) and peak RSS the kernel counts (``os.wait4``, as bench_scan.py):

1. ``fathom scan`` into a fresh SQLite file (the first night), 2. the same scan again (an unchanged night),
3. ``fathom report``, 4. ``fathom rescore --dry-run``, 5. ``fathom findings --open``, 6. ``fathom servers``;
7. with ``--postgres URL`` (default ``$FATHOM_TEST_POSTGRES_URL``; its public schema is emptied):
   ``fathom scan --enqueue`` and two ``fathom worker --until-idle`` sharing the concurrency.

Printed per step: the figures, the database (or site, or output) size after it, and the ratio N / 2 000 (what grows
with servers); then the targets: the whole night under an hour, every step's peak RSS under 1 GB and not growing
with servers, the report under 10 minutes. ``--profile STEP,...`` runs those steps once more at N under
tracemalloc and cProfile and prints where the peak heap was allocated and where the time went.

The servers all share one host, so ``--per-host`` is set to the concurrency (a real registry's servers are on
thousands of hosts). The orchestrating process stays small on purpose: Linux carries a parent's peak RSS into a
child it starts (``ru_maxrss`` survives exec), so its own peak is printed as the floor under every figure.

    .venv/bin/python bench/bench_nightly.py [--servers 25000] [--small 2000] [--latency-ms 50] [--json PATH]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_registry_scale import build_rows, serve
from bench_scan import _load, database_bytes, run_measured

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REAL = ROOT / "tests" / "fixtures" / "real"
WORK = ROOT / "artifacts" / "bench-nightly"

# The failure mix, per 100 entries (entry index modulo 100): about one in five fails, in the real registry's
# ways. The rest answer, after the latency, with their real list.
MIX: tuple[tuple[str, int], ...] = (
    ("402", 2),  # payment required
    ("429", 2),  # rate limited on every attempt
    ("not_mcp", 3),  # a 200 HTML page
    ("404", 4),  # nothing at that path
    ("slow", 1),  # answers only after the deadline: a timeout
    ("hang", 1),  # a 200 whose body never ends: a timeout
    ("auth", 4),  # 401 with an RFC 9728 challenge
    ("dns", 2),  # a host that does not resolve (*.invalid)
    ("refused", 1),  # a closed port
)


def fault_of(index: int) -> str:
    """The entry's fault ("" when it answers), the same in the host and in the registry."""
    slot = index % 100
    for fault, share in MIX:
        if slot < share:
            return fault
        slot -= share
    return ""


def _real_lists() -> list[list[dict[str, Any]]]:
    lists = []
    for path in sorted(REAL.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("tools"), list):
            lists.append(data["tools"])
    return lists


def serve_mcp(count: int, latency: float, stall: float) -> None:
    """Child process: serve ``count`` servers until killed; print the base URL first."""
    from scanner.demo.server import DemoHost, Site

    lists = _real_lists()
    sites = []
    for index in range(count):
        fault = fault_of(index)
        if fault in ("404", "dns", "refused"):
            continue
        tools = lists[index % len(lists)]
        first = dict(tools[0], description=f"{tools[0].get('description') or ''} (server {index:05d})")
        sites.append(
            Site(
                name=f"s{index:05d}",
                version="1.0.0",
                tools=[first, *tools[1:]],
                mode="auth" if fault == "auth" else "legacy",
                fault="" if fault == "auth" else fault,
            )
        )
    host = DemoHost(sites, latency=latency, stall=stall)
    print(host.base_url, flush=True)
    host._server.serve_forever()


def serve_registry(count: int, mcp_base: str) -> None:
    """Child process: serve a registry API of ``count`` real-shaped entries until killed; print its URL first."""
    with socket.socket() as probe:  # a loopback port nobody listens on, for the "refused" entries
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    rows = build_rows(count)
    for index, row in enumerate(rows):
        server = row["server"]
        server.pop("packages", None)
        fault = fault_of(index)
        if fault == "dns":
            url = f"http://s{index:05d}.invalid/mcp"
        elif fault == "refused":
            url = f"http://127.0.0.1:{closed}/s{index:05d}/mcp"
        elif fault == "404":
            url = f"{mcp_base}/gone{index:05d}/mcp"
        else:
            url = f"{mcp_base}/s{index:05d}/mcp"
        remote = dict((server.get("remotes") or [{}])[0])
        remote.pop("variables", None)
        server["remotes"] = [{**remote, "type": "streamable-http", "url": url}]
    _, url = serve(rows)
    print(url, flush=True)
    while True:
        time.sleep(3600)


@dataclass
class Step:
    name: str
    wall: float = 0.0
    cpu: float = 0.0
    peak_mb: float = 0.0
    size_mb: float = 0.0  # the database after it, the site, or the output
    size_of: str = ""
    note: str = ""
    processes: int = 1


@dataclass
class Night:
    servers: int
    steps: list[Step] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    site_parts: dict[str, float] = field(default_factory=dict)


def _child(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("http"):
        raise SystemExit(f"{argv[2:4]} did not start")
    return process, line


def _stop(process: subprocess.Popen[str]) -> float:
    """Kill a server process and return the CPU it used."""
    process.kill()
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = -9
    return usage.ru_utime + usage.ru_stime


def _fathom(*args: str) -> list[str]:
    return [sys.executable, "-m", "scanner", *args]


def _folder_mb(path: Path) -> float:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file()) / 1e6


def _site_parts(site: Path) -> dict[str, float]:
    """MB of the site by top-level folder (and the loose files), largest first."""
    parts: dict[str, float] = {}
    for item in site.rglob("*"):
        if item.is_file():
            relative = item.relative_to(site).parts
            key = relative[0] + "/" if len(relative) > 1 else "(top-level files)"
            parts[key] = parts.get(key, 0.0) + item.stat().st_size / 1e6
    return dict(sorted(parts.items(), key=lambda part: -part[1]))


def _step(name: str, argv: list[str], stdout: Path | None = None) -> Step:
    if stdout is not None:  # a query's output goes to a file; only its size is kept (this process stays small)
        argv = ["sh", "-c", 'out="$1"; shift; exec "$@" > "$out"', "sh", str(stdout), *argv]
    measured = run_measured(argv, cwd=ROOT)
    step = Step(name, measured.wall, measured.cpu, measured.max_rss_mb)
    if stdout is not None:
        step.size_mb, step.size_of = stdout.stat().st_size / 1e6, "output"
    return step


def night(
    count: int, mcp_base: str, work: Path, concurrency: int, timeout: float, postgres: str, scans_only: bool = False
) -> Night:
    """Every step of a night (two nights of scans) against a fresh registry of ``count`` entries; only the two
    scans with ``scans_only`` (the databases kept in ``work``, to measure a later step apart)."""
    registry, url = _child([sys.executable, __file__, "--serve-registry", str(count), "--mcp-base", mcp_base])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    database = work / "nightly.db"
    result = Night(count)
    scan = ["scan", url, "--db", str(database), "--allow-private", "--format", "json", "--timeout", str(timeout)]
    scan += ["--concurrency", str(concurrency), "--per-host", str(concurrency)]
    try:
        for label in ("scan, first night", "scan, unchanged night"):
            step = _step(label, _fathom(*scan), stdout=work / "scan.json")
            step.size_mb, step.size_of = database_bytes(database) / 1e6, "database"
            summary = json.loads((work / "scan.json").read_text(encoding="utf-8"))
            step.note = " ".join(f"{k}={v}" for k, v in sorted(summary.get("counts", {}).items()))
            result.outcomes = summary.get("counts", {})
            result.steps.append(step)
            _progress(count, step)
        if scans_only:
            return result
        site = work / "site"
        step = _step("report", _fathom("report", "--db", str(database), "--out", str(site)))
        step.size_mb, step.size_of = _folder_mb(site), "site"
        step.note = f"{sum(1 for item in site.rglob('*') if item.is_file())} files"
        result.site_parts = _site_parts(site)
        result.steps.append(step)
        _progress(count, step)
        for label, argv, out in (
            ("rescore --dry-run", ["rescore", "--db", str(database), "--dry-run"], work / "rescore.txt"),
            ("findings --open", ["findings", "--open", "--db", str(database)], work / "findings.txt"),
            ("servers", ["servers", "--db", str(database)], work / "servers.txt"),
        ):
            step = _step(label, _fathom(*argv), stdout=out)
            step.note = f"{sum(1 for _ in out.open(encoding='utf-8'))} lines"
            result.steps.append(step)
            _progress(count, step)
        if postgres:
            result.steps.append(_distributed(url, postgres, concurrency, timeout))
            _progress(count, result.steps[-1])
    finally:
        _stop(registry)
    return result


def _distributed(url: str, postgres: str, concurrency: int, timeout: float) -> Step:
    """``scan --enqueue`` then two workers on an emptied PostgreSQL: one first night, all processes summed."""
    from bench_distributed import _size
    from sqlalchemy import text

    from scanner.store.engine import create_store_engine

    engine = create_store_engine(postgres)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    started = time.perf_counter()
    enqueue = run_measured(_fathom("scan", url, "--db", postgres, "--allow-private", "--enqueue"), cwd=ROOT)
    share = str(max(concurrency // 2, 1))
    argv = _fathom("worker", "--db", postgres, "--allow-private", "--until-idle", "--timeout", str(timeout))
    argv += ["--concurrency", share, "--per-host", share]
    workers = [subprocess.Popen([*argv, "--name", f"w{n}"], stdout=subprocess.DEVNULL, cwd=ROOT) for n in range(2)]
    cpu, peak = enqueue.cpu, enqueue.max_rss_mb
    for worker in workers:
        _, status, usage = os.wait4(worker.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"a worker failed with {os.waitstatus_to_exitcode(status)}")
        cpu += usage.ru_utime + usage.ru_stime
        peak = max(peak, usage.ru_maxrss / 1024)
    step = Step("PostgreSQL: enqueue + 2 workers", time.perf_counter() - started, cpu, peak, processes=3)
    step.size_mb, step.size_of = _size(postgres) / 1e6, "database"
    engine = create_store_engine(postgres)
    with engine.connect() as connection:
        status = connection.execute(text("SELECT status FROM runs ORDER BY id DESC LIMIT 1")).scalar_one()
        scans = connection.execute(text("SELECT outcome, count(*) FROM scans GROUP BY outcome ORDER BY outcome"))
        step.note = f"run {status}: " + " ".join(f"{outcome}={count}" for outcome, count in scans)
    engine.dispose()
    return step


def _progress(count: int, step: Step) -> None:
    print(
        f"  [{count}] {step.name}: {step.wall:.1f} s wall, {step.cpu:.1f} s CPU, {step.peak_mb:.0f} MB peak, "
        f"{step.size_of} {step.size_mb:.1f} MB {step.note} (load {_load()})",
        flush=True,
    )


PROFILER = """
import cProfile, io, os, pstats, sys, threading, time, tracemalloc
tracemalloc.start(12)
best = {"peak": 0, "snapshot": None}
done = threading.Event()
def sample():
    while not done.wait(0.5):
        current = tracemalloc.get_traced_memory()[0]
        if current > best["peak"] * 1.05:
            best["peak"], best["snapshot"] = current, tracemalloc.take_snapshot()
threading.Thread(target=sample, daemon=True).start()
from scanner.cli import app
profile = cProfile.Profile()
sys.stdout = open(os.devnull, "w")
profile.enable()
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    profile.disable()
    done.set()
    sys.stdout = sys.__stdout__
print(f"peak traced heap {tracemalloc.get_traced_memory()[1] / 1e6:.0f} MB; largest at {best['peak'] / 1e6:.0f} MB:")
if best["snapshot"] is not None:
    for stat in best["snapshot"].statistics("traceback")[:6]:
        frames = [f for f in stat.traceback if "/scanner/" in f.filename] or list(stat.traceback)
        where = " <- ".join(f"{f.filename.split('/scanner/')[-1]}:{f.lineno}" for f in frames[-1:-4:-1])
        print(f"  {stat.size / 1e6:8.1f} MB in {stat.count:>9,} blocks  {where}")
stream = io.StringIO()
pstats.Stats(profile, stream=stream).sort_stats("cumulative").print_stats("/scanner/", 18)
print(stream.getvalue())
"""


def profile_step(step: str, work: Path) -> None:
    database = work / "nightly.db"
    args = {
        "report": ["report", "--db", str(database), "--out", str(work / "site-profiled")],
        "rescore": ["rescore", "--db", str(database), "--dry-run"],
        "findings": ["findings", "--open", "--db", str(database)],
        "servers": ["servers", "--db", str(database)],
    }[step]
    print(f"\nprofile of `fathom {' '.join(args[:2])}` at {work.name} (tracemalloc + cProfile, slower than above):")
    done = subprocess.run([sys.executable, "-c", PROFILER, *args], capture_output=True, text=True, cwd=ROOT)
    print(done.stdout[:6000] if done.returncode == 0 else done.stderr[-2000:], flush=True)


def _ratio(big: float, small: float) -> str:
    return f"{big / small:.1f}x" if small > 0 else "-"


def print_table(small: Night | None, big: Night) -> None:
    head = f"  {'step':34}"
    sizes = [night for night in (small, big) if night is not None]
    for size in sizes:
        head += f"{'|':>2} {size.servers:>6} servers: wall s   CPU s  peak MB  size MB "
    if small is not None:
        head += "| ratio wall  CPU  peak"
    print(head)
    for index, step in enumerate(big.steps):
        line = f"  {step.name:34}"
        for size in sizes:
            own = size.steps[index]
            line += f" | {'':15}{own.wall:>8.1f}{own.cpu:>8.1f}{own.peak_mb:>9.0f}{own.size_mb:>9.1f} "
        if small is not None:
            other = small.steps[index]
            line += (
                f"| {_ratio(step.wall, other.wall):>9}{_ratio(step.cpu, other.cpu):>6}"
                f"{_ratio(step.peak_mb, other.peak_mb):>6}"
            )
        print(line + f"  {step.size_of}")


def targets(big: Night, small: Night | None) -> list[tuple[str, bool, str]]:
    by = {step.name: step for step in big.steps}
    night_steps = [step for step in big.steps if step.name != "scan, unchanged night" and "PostgreSQL" not in step.name]
    whole = sum(step.wall for step in night_steps)
    found = [
        ("whole night (first scan, report, rescore, queries) < 1 h", whole < 3600, f"{whole / 60:.1f} min"),
        ("report < 10 min", by["report"].wall < 600, f"{by['report'].wall / 60:.1f} min"),
    ]
    for step in big.steps:
        found.append((f"{step.name}: peak RSS < 1 GB", step.peak_mb < 1024, f"{step.peak_mb:.0f} MB"))
    if small is not None:
        for step, other in zip(big.steps, small.steps, strict=True):
            grows = step.peak_mb / max(other.peak_mb, 1) > 1.5
            found.append(
                (
                    f"{step.name}: peak not growing with servers (x{big.servers / small.servers:.1f} servers)",
                    not grows,
                    f"{other.peak_mb:.0f} -> {step.peak_mb:.0f} MB",
                )
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=25_000)
    parser.add_argument("--small", type=int, default=2000, help="the comparison size (0: none)")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=30.0, help="the scan's deadline per server (its default)")
    parser.add_argument("--postgres", default=os.environ.get("FATHOM_TEST_POSTGRES_URL", ""), help="emptied!")
    parser.add_argument("--work", type=Path, default=WORK, help="databases and sites (default: %(default)s)")
    parser.add_argument("--profile", default="", help="steps to profile at --servers: report,rescore,findings")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    parser.add_argument(
        "--scans-only", action="store_true", help="only the two nights' scans: keep the databases under --work"
    )
    parser.add_argument("--serve-mcp", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-registry", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mcp-base", help=argparse.SUPPRESS)
    parser.add_argument("--stall", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_mcp is not None:
        serve_mcp(args.serve_mcp, args.latency_ms / 1000, args.stall)
        return
    if args.serve_registry is not None:
        serve_registry(args.serve_registry, args.mcp_base)
        return

    compileall.compile_dir(ROOT / "scanner", quiet=1)  # as bench_scan.py: an installed Fathom is byte-compiled
    began = time.perf_counter()
    serving = ["--serve-mcp", str(args.servers), "--latency-ms", str(args.latency_ms), "--stall", str(args.timeout * 2)]
    host, mcp_base = _child([sys.executable, __file__, *serving])
    nights: list[Night] = []
    try:
        for count in [size for size in (args.small, args.servers) if size]:
            print(f"{count} servers:", flush=True)
            work = args.work / str(count)
            nights.append(night(count, mcp_base, work, args.concurrency, args.timeout, args.postgres, args.scans_only))
        for step in [part for part in args.profile.split(",") if part]:
            profile_step(step, args.work / str(args.servers))
    finally:
        host_cpu = _stop(host)
    small, big = (nights[0], nights[1]) if len(nights) == 2 else (None, nights[-1])
    if args.scans_only:
        print(f"databases: {', '.join(str(args.work / str(each.servers) / 'nightly.db') for each in nights)}")
        return
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print()
    print(
        f"The nightly at registry scale: {args.latency_ms:.0f} ms a request, concurrency {args.concurrency} "
        f"(per host too), deadline {args.timeout:.0f} s; load {_load()}"
    )
    print(f"outcomes at {big.servers}: " + ", ".join(f"{k} {v}" for k, v in sorted(big.outcomes.items())))
    print_table(small, big)
    print(f"  site by folder at {big.servers}: " + ", ".join(f"{k} {v:.0f} MB" for k, v in big.site_parts.items()))
    print(
        f"  loopback servers' own CPU {host_cpu:.0f} s; this process's peak {own:.0f} MB (the floor under every "
        f"peak above); whole benchmark {(time.perf_counter() - began) / 60:.1f} min"
    )
    found = targets(big, small)
    for name, met, figure in found:
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
    if args.json is not None:
        figures = {
            "latency_ms": args.latency_ms,
            "concurrency": args.concurrency,
            "load": _load(),
            "nights": [asdict(each) for each in nights],
            "targets": [{"target": name, "met": met, "figure": figure} for name, met, figure in found],
            "host_cpu_s": round(host_cpu, 1),
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
