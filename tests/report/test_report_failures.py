"""A report that explains failures: unranked servers grouped by cause with counts and one-line reasons; a failed
package's page shows what was run, its stderr tail (escaped) and its scans as a table, not two empty charts;
same-day runs read with their time on chart ticks; counts take the right plural.

Two runs on one day, written through the store's real write path with the fixed clock of ``conftest``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from scanner.measure.toollist import measure
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.report import build_report
from scanner.rules.registry import RULES_VERSION
from scanner.store import open_store

from .conftest import ALPHA, FIXED_NOW, FixedClock, entry, ok


def package(name: str, identifier: str, version: str) -> ServerEntry:
    return ServerEntry(
        name=name,
        transport=Transport.STDIO,
        command=("npx", "-y", f"{identifier}@{version}", "--api-key", "sk-NOT-STORED-1234"),
        env={"API_KEY": "env-NOT-STORED-5678"},
        version=version,
        package={"registryType": "npm", "identifier": identifier, "version": version, "pinned": True},
    )


def crashed(detail: str, tail: list[str]) -> ScanOutcome:
    return ScanOutcome(Outcome.CRASHED, "stdio", detail=detail, extra={"stderr_tail": tail})


TAIL = [
    "starting with env-NOT-STORED-5678",
    "Traceback (most recent call last):",
    '  File "<tmp>/server.py", line 3, in <module>',
    "ValueError: <script>alert(1)</script> \x1b[31m",
]


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_failures_grouped_by_cause_and_a_failed_page_that_explains(tmp_path: Path, clock: FixedClock) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'f.db'}")
    plan: list[list[tuple[ServerEntry, ScanOutcome]]] = [
        [
            (entry("alpha"), ok(ALPHA, "alpha-server")),
            (package("crashy", "crashy-mcp", "1.0.0"), crashed("ValueError: boom", TAIL)),
        ],
        [
            (entry("alpha"), ok(ALPHA, "alpha-server")),
            (package("crashy", "crashy-mcp", "1.0.1"), crashed("ValueError: <script>alert(1)</script>", TAIL)),
            (
                package("nokey", "nokey-mcp", "2.0.0"),
                ScanOutcome(Outcome.NEEDS_CONFIGURATION, "stdio", detail="Error: NOKEY_TOKEN is required"),
            ),
            (
                package("broken", "broken-mcp", "0.1.0"),
                ScanOutcome(Outcome.INSTALL_FAILED, "stdio", detail="npm error could not determine executable"),
            ),
            (
                package("gone", "gone-mcp", "9.9.9"),
                ScanOutcome(Outcome.PACKAGE_NOT_FOUND, "stdio", detail="gone-mcp@9.9.9 not found: npm error 404"),
            ),
            (
                package("policy", "policy-mcp", "1.0.0"),
                ScanOutcome(Outcome.SKIPPED, "stdio", detail="package (npm policy-mcp): needs --run-packages"),
            ),
        ],
    ]
    try:
        for hour, scans in zip((2, 14), plan, strict=True):  # two runs on one day
            clock.set(datetime(2026, 3, 1, hour, 0, tzinfo=UTC))
            run_id = store.start_run("registry.json", RULES_VERSION, {})
            for server, outcome in scans:
                store.record_scan(run_id, server, outcome, measure)
            store.finish_run(run_id)
        out = tmp_path / "site"
        build_report(store, out, now=FIXED_NOW)
    finally:
        store.close()

    index = text_of((out / "index.html").read_text(encoding="utf-8"))
    assert "1 server ranked by score" in index and "5 servers could not be read and are listed apart" in index
    # The causes with their counts, in the order a nightly registry scan meets them, each row with its reason.
    assert (
        "Install failed : 1 Package not found : 1 Needs configuration : 1 Crashed or exited : 1 Skipped by policy : 1"
        in index
    )
    assert (
        "Install failed (1 server) npm error could not determine executable: 1 server Server Outcome Reason "
        "broken install_failed npm error could not determine executable" in index
    )
    assert "nokey needs_configuration Error: NOKEY_TOKEN is required" in index
    assert "policy skipped package (npm policy-mcp): needs --run-packages" in index

    page = (out / "servers" / "crashy.html").read_text(encoding="utf-8")
    visible = text_of(page)
    assert (
        "What was run Registry version 1.0.1 Package npm crashy-mcp 1.0.1 "
        "Command npx -y crashy-mcp@1.0.1 --api-key &#39;&lt;secret&gt;&#39;" in visible
    )
    stderr = re.search(r'<pre class="stderr">(.*?)</pre>', page, re.S)
    assert stderr is not None
    assert stderr.group(1).splitlines() == [
        "starting with &lt;secret&gt;",
        "Traceback (most recent call last):",
        "  File &#34;&lt;tmp&gt;/server.py&#34;, line 3, in &lt;module&gt;",
        "ValueError: &lt;script&gt;alert(1)&lt;/script&gt; \\u001b[31m",
    ]
    assert "<script>" not in page
    # Its scans as a table, newest first, with the time since both runs were on one day; no empty charts.
    assert "<svg" not in page
    assert (
        "Scan history Run Date (UTC) Outcome Detail "
        "2 2026-03-01 14:00 crashed ValueError: &lt;script&gt;alert(1)&lt;/script&gt; "
        "1 2026-03-01 02:00 crashed ValueError: boom"
    ) in visible
    assert "No tool list was read in this run." in visible

    # A server that answered keeps its charts, and their ticks say the time when the runs share a day.
    alpha = (out / "servers" / "alpha.html").read_text(encoding="utf-8")
    assert alpha.count("<svg") == 4  # each chart drawn for wide screens and for a phone
    assert ">2026-03-01 02:00</text>" in alpha and ">2026-03-01 14:00</text>" in alpha
    # Its tools lack annotations (MCP110, three notes); catalogue 5 finds no relatives among them (MCP105 needs
    # similar descriptions too): notes only, counted with the right plural.
    assert "0 problems, 0 warnings, 3 notes" in text_of(alpha)
    trends = (out / "trends.html").read_text(encoding="utf-8")
    assert ">2026-03-01 14:00</text>" in trends and "Trends over 2 runs" in trends

    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Not ranked: 5 servers whose tool list could not be read" in markdown
    assert "### Needs configuration (1 server)" in markdown
    for path in (tmp_path / "f.db", *out.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            assert b"NOT-STORED" not in data, path


def scan_into_site(tmp_path: Path, name: str, servers: list[dict[str, object]], *flags: str) -> Path:
    """``fathom scan`` of a registry file holding ``servers`` into its own SQLite store, then ``fathom report``."""
    import json

    from typer.testing import CliRunner

    from scanner.cli import app

    source = tmp_path / f"{name}.json"
    source.write_text(json.dumps({"servers": [{"server": server} for server in servers]}), encoding="utf-8")
    db, site = tmp_path / f"{name}.db", tmp_path / f"{name}-site"
    runner = CliRunner()
    scanned = runner.invoke(app, ["scan", str(source), "--db", str(db), *flags])
    assert scanned.exit_code == 0, scanned.output
    reported = runner.invoke(app, ["report", "--db", str(db), "--out", str(site)])
    assert reported.exit_code == 0, reported.output
    return site


def server_page(site: Path, name: str) -> str:
    slug = name.replace(".", "-").replace("/", "-")
    [page] = [path for path in (site / "servers").glob("*.html") if path.name.startswith(slug)]
    return page.read_text(encoding="utf-8")


def test_a_package_that_was_not_run_keeps_what_was_declared_on_its_page(tmp_path: Path) -> None:
    """Issue 19 (8): a skipped registry package's page says what was declared and why it was not run, escaped,
    and does not claim a command was run; a package that ran keeps "What was run"."""

    def server(name: str, package: dict[str, object]) -> dict[str, object]:
        return {"name": name, "version": "1.0.0", "packages": [{"transport": {"type": "stdio"}, **package}]}

    plain = scan_into_site(
        tmp_path,
        "plain",
        [
            server("io.github.t/foo", {"registryType": "npm", "identifier": "foo", "version": "1.2.3"}),
            server(
                "io.github.t/nuget",
                {"registryType": "nuget", "identifier": "Acme.Mcp<script>", "version": "1.2.3</dd>"},
            ),
        ],
    )  # no --run-packages
    foo = server_page(plain, "io.github.t/foo")
    visible = text_of(foo)
    assert (
        "Not run Registry version 1.0.0 Declared npm foo@1.2.3; not run: package (npm foo): needs --run-packages"
    ) in visible
    assert "What was run" not in visible and "npx -y" not in visible  # nothing ran: no command claimed

    nuget = server_page(plain, "io.github.t/nuget")
    assert (
        "Declared nuget Acme.Mcp&lt;script&gt;@1.2.3&lt;/dd&gt;; "
        "not run: nuget packages are not run (dnx needs the .NET 10 SDK)"
    ) in text_of(nuget)
    assert "<script>" not in nuget and "1.2.3</dd>" not in nuget

    # With --run-packages, a package missing a required argument is not started either: needs_configuration,
    # and its page says so the same way (no version declared: said, not invented).
    needs = scan_into_site(
        tmp_path,
        "needs",
        [
            server(
                "io.github.t/cfg",
                {
                    "registryType": "pypi",
                    "identifier": "cfg-mcp",
                    "packageArguments": [{"type": "named", "name": "--pcap-path", "isRequired": True}],
                },
            )
        ],
        "--run-packages",
    )
    assert (
        "Declared pypi cfg-mcp (no version declared); not run: needs configuration: --pcap-path needs a value"
    ) in text_of(server_page(needs, "io.github.t/cfg"))
