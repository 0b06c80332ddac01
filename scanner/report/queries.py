"""The questions ``fathom runs|servers|history|findings|diff`` answer, as flat rows ready for a table, JSON or CSV.

Each function opens the store, asks it one query (the store writes the SQL), and flattens the frozen rows it gets
into plain dicts with stable column names. The CLI only picks the format.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from scanner.errors import InputError
from scanner.measure import metrics as scan_metrics
from scanner.models import PROVIDERS, Severity
from scanner.report.preview import mark, only_visible, tag, visible
from scanner.scan.lanes import lanes_text
from scanner.store import FindingRow, RunSpec, ScanScore, Store, open_store, owner
from scanner.textsafe import clean

RUN_COLUMNS = ["run", "started_at", "finished_at", "status", "servers_scanned", "servers_ok", "source"]
# A distributed run also shows its progress (scanned of planned) and the workers that wrote it.
DISTRIBUTED_RUN_COLUMNS = [*RUN_COLUMNS[:5], "planned", "servers_ok", "workers", "source"]
SERVER_COLUMNS = [
    "server",
    "last_outcome",
    "last_scanned_at",
    "version",
    "tools",
    "score",
    "problems",
    "warnings",
    "notes",
    *PROVIDERS,
    "will_it_load",
    "detail",
]
HISTORY_COLUMNS = [
    "run",
    "scanned_at",
    "outcome",
    "registry_version",
    "version",
    "tools",
    *PROVIDERS,
    "score",
    "problems",
    "warnings",
    "notes",
    "detail",
    "will_it_load",
    "lanes",
]


def history_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns for :func:`history`: :data:`HISTORY_COLUMNS` with one per registered metric (by name)
    after the finding counts."""
    at = HISTORY_COLUMNS.index("detail")
    return [*HISTORY_COLUMNS[:at], *scan_metrics.METRICS, *HISTORY_COLUMNS[at:]]


CLIENT_SERVER_COLUMNS = ["server", "last_run", "tools", "score", "state", "verdict", "rules", "since_run"]
FINDING_COLUMNS = ["server", "code", "severity", "tool", "first_seen_run", "gone_run", "message"]
DIFF_COLUMNS = ["change", "tool", "detail"]
RULE_COLUMNS = ["code", "severity", "status", "slug", "hint"]

# Columns a table may leave out, last first, when wrapping text is not enough to fit the terminal (``--wide``
# keeps them all; JSON and CSV always have every column).
OPTIONAL_COLUMNS: dict[str, list[str]] = {
    "runs": ["finished_at", "servers_scanned"],
    # detail stays (wrapped): why a server failed is what a reader of a narrow table came for
    "servers": [
        "problems",
        PROVIDERS[0],
        "warnings",
        "will_it_load",
        "last_scanned_at",
        "version",
        "notes",
        *PROVIDERS[1:],
    ],
    "client-servers": ["score", "tools", "rules"],
    "history": [
        "lanes",
        "registry_version",
        "version",
        "will_it_load",
        *scan_metrics.METRICS,
        "notes",
        *PROVIDERS[1:],
    ],
    "findings": ["first_seen_run", "gone_run"],
    "diff": [],
    "rules": ["status"],
}
# The free-text columns a table wraps first to fit the terminal (names and codes stay whole while they can).
WRAP_COLUMNS = ("detail", "message", "source", "hint", "lanes", "workers", "will_it_load")


def _client_findings(store: Store, names: list[str], preview: bool = False) -> list[FindingRow]:
    """The stored findings still open that name clients (the MCP8xx rules, and MCP101/MCP201/MCP205/MCP214/MCP216
    where they do: :func:`scanner.measure.verdicts.verdict_codes`) of the servers ``names``, by server and then in
    the order of those codes; preview rules' only with ``preview``."""
    from scanner.measure.verdicts import client_effects, verdict_codes

    codes = [code for code in verdict_codes() if visible(code, preview)]
    return [row for row in store.open_findings_of(names, codes) if client_effects(row)]


def _loads(rows: list[FindingRow]) -> tuple[str, dict[str, Any]]:
    """The ``will_it_load`` cell and the ``verdicts`` object of JSON output (only the clients that do not load the
    list whole, or that a preview rule says may not; empty when every client loads it), from stored findings."""
    from scanner.measure.verdicts import compact, to_json, verdicts

    found = verdicts(rows)
    shown = [verdict for verdict in found if verdict.state != "loads" or verdict.preview_state is not None]
    return compact(found), to_json(shown)


def runs(db_url: str) -> list[dict[str, Any]]:
    with open_store(db_url) as store:
        found = store.runs()
    return [
        {
            "run": run.id,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            # A run left ``running`` by a process that is gone (killed) reads as what it is; resumable.
            "status": "interrupted"
            if run.status == "running" and owner.gone(run.options.get(owner.KEY))
            else run.status,
            "servers_scanned": run.servers_scanned,
            "servers_ok": run.servers_ok,
            "source": run.source,
            "rule_version": run.rule_version,
            "planned": run.planned,
            "workers": list(run.workers),
        }
        for run in found
    ]


def run_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns for :func:`runs`: with ``planned`` and ``workers`` when a run is distributed."""
    return DISTRIBUTED_RUN_COLUMNS if any(row["planned"] is not None for row in rows) else RUN_COLUMNS


def since_run(history_rows: list[FindingRow], current: list[FindingRow], client: str) -> int | None:
    """The run since which ``client`` has not loaded the list whole: the earliest first appearance (history's
    ``first_seen_run``, open still) of the findings that decide its verdict now."""
    from scanner.measure.verdicts import client_effects

    deciding = {(row.code, row.tool) for row in current if any(item[0] == client for item in client_effects(row))}
    runs = [row.first_seen_run for row in history_rows if (row.code, row.tool) in deciding and row.gone_run is None]
    return min((run for run in runs if run is not None), default=None)


def servers_for_client(
    db_url: str, client: str, state: str | None = None, preview: bool = False
) -> list[dict[str, Any]]:
    """``fathom servers --client KEY [--state refuses|drops]``: the servers whose newest scan ``client`` does not
    load whole (or only those in ``state``), each with its verdict, the rules deciding it, and the run since which
    it has been so (from the findings' history)."""
    from scanner.measure.verdicts import verdict_codes, verdicts
    from scanner.report.clients_view import findings_at

    # only the rows whose verdicts say this client does not load the list whole are held
    rows = [row for row in server_rows(db_url, preview) if client in (row["verdicts"] or {})]
    out = []
    with open_store(db_url) as store:
        by_run: dict[int, list[dict[str, Any]]] = {}
        for row in rows:
            if row["last_run"] is not None and row["last_outcome"] == "ok":
                by_run.setdefault(int(row["last_run"]), []).append(row)
        present = findings_at(store, *by_run)
        for run, in_run in sorted(by_run.items()):
            current = present[run]
            for row in in_run:
                found = [f for f in current.get(row["server"], []) if visible(f.code, preview)]
                if not found:
                    continue
                verdict = next(item for item in verdicts(found) if item.client == client)
                if verdict.state == "loads" or (state is not None and verdict.state != state):
                    continue
                history_rows = [
                    item
                    for code in sorted({finding.code for finding in found} & set(verdict_codes()))
                    for item in store.findings(rule=code, server=row["server"])
                ]
                out.append(
                    {
                        **row,
                        "client": client,
                        "state": verdict.state,
                        "verdict": verdict.phrase(),
                        "rules": " ".join(verdict.codes),
                        "since_run": since_run(history_rows, found, client),
                    }
                )
    return sorted(out, key=lambda item: str(item["server"]))


def servers(db_url: str, preview: bool = False) -> list[dict[str, Any]]:
    """Every row of :func:`server_rows`, held."""
    return list(server_rows(db_url, preview))


SERVER_CHUNK = 500
"""Servers :func:`server_rows` reads (and holds) at a time."""


def server_rows(db_url: str, preview: bool = False, *, clients: bool = True) -> Iterator[dict[str, Any]]:
    """Every server by name, read :data:`SERVER_CHUNK` servers at a time (what is held is one chunk's, whatever
    the registry's size); the tools, tokens, score and finding counts are those of its last successful scan (the
    counts are the scored findings'; "will it load" reads preview rules only with ``preview``); ``clients``
    (what each client sends per turn at rest, scanner.measure.clients: JSON and CSV) is measured only when asked,
    otherwise None."""
    with open_store(db_url) as store:
        names = store.server_names()
        for start in range(0, len(names), SERVER_CHUNK):
            yield from _server_chunk(store, names[start : start + SERVER_CHUNK], preview, clients)


def _server_chunk(store: Store, names: list[str], preview: bool, with_clients: bool) -> list[dict[str, Any]]:
    """:func:`server_rows` of one chunk of servers."""
    from scanner.report.clients_view import findings_at

    found = store.servers(names)
    scores = store.scan_scores(row.last_ok_scan_id for row in found if row.last_ok_scan_id is not None)
    told = store.scans_instructions_tokens([row.last_ok_scan_id for row in found if row.last_ok_scan_id])
    clients = (
        _clients(store, [(row.toolset_sha256, row.tokens, told.get(row.last_ok_scan_id or -1)) for row in found])
        if with_clients
        else {}
    )
    # A server whose newest scan answered: that scan's findings with their details (MCP101 and the lists that are
    # not valid MCP name their clients only there; history's rows keep no details); one whose newest scan failed:
    # the findings still open from the scans before.
    answered = {row.name: row.last_run_id for row in found if row.last_outcome == "ok" and row.last_run_id}
    present = findings_at(store, *sorted(set(answered.values())), names=list(answered))
    failed = [row.name for row in found if row.last_ok_scan_id is not None and row.name not in answered]
    rejected: dict[str, list[FindingRow]] = {}
    for finding in _client_findings(store, failed, preview):
        rejected.setdefault(finding.server, []).append(finding)
    for name, run in answered.items():
        rejected[name] = [f for f in present[run].get(name, []) if visible(f.code, preview)]
    loads = {row.name: _loads(rejected.get(row.name, [])) for row in found if row.last_ok_scan_id is not None}
    return [
        {
            "server": row.name,
            "last_outcome": row.last_outcome,
            "last_scanned_at": row.last_scanned_at,
            "last_run": row.last_run_id,
            "version": row.server_version,
            "tools": row.tools_count,
            **_scored(scores.get(row.last_ok_scan_id) if row.last_ok_scan_id is not None else None),
            **{provider: row.tokens.get(provider) for provider in PROVIDERS},
            "will_it_load": loads[row.name][0] if row.name in loads else None,
            "verdicts": loads[row.name][1] if row.name in loads else None,
            "clients": clients.get(_key(row.toolset_sha256, told.get(row.last_ok_scan_id or -1)))
            if row.last_ok_scan_id is not None and with_clients
            else None,
            "detail": row.last_detail,
            "toolset_sha256": row.toolset_sha256,
            **_ran(row.last_run or RunSpec()),
            "stderr_tail": list(row.last_stderr_tail),
        }
        for row in found
    ]


def _clients(store: Store, lists: list[tuple[str | None, Any, int | None]]) -> dict[str, dict[str, int]]:
    """Each listed toolset's cost per client at rest (with the OpenAI count of its scan's instructions, which Codex
    and the OpenAI namespace show), by :func:`_key`."""
    from scanner.report.client_costs import StoredToolset, client_costs

    stored = [StoredToolset(sha, dict(tokens), told) for sha, tokens, told in lists if sha and tokens]
    return client_costs(store, stored)


def _key(sha: str | None, told: int | None) -> str:
    from scanner.report.client_costs import StoredToolset

    return StoredToolset(sha or "", {}, told).key


def _ran(ran: RunSpec) -> dict[str, Any]:
    """What a scan ran, as columns: the registry version, the package, the URL, the command (redacted)."""
    return {
        "registry_version": ran.registry_version,
        "package": dict(ran.package) if ran.package is not None else None,
        "url": ran.url,
        "command": ran.command,
    }


def _scored(found: ScanScore | None) -> dict[str, Any]:
    """The score and finding counts as columns; all None for a server that never listed tools."""
    if found is None:
        return {"score": None, "problems": None, "warnings": None, "notes": None}
    return {"score": found.score, "problems": found.problems, "warnings": found.warnings, "notes": found.notes}


def history(db_url: str, server: str, preview: bool = False) -> list[dict[str, Any]]:
    """One server's scans, oldest first, each with its score (None for a scan that listed no tools); "will it
    load" reads preview rules only with ``preview``."""
    with open_store(db_url) as store:
        found = store.history(server)
        scores = store.scan_scores(row.scan_id for row in found if row.ok)
        # Each answering scan's findings with their details (history's rows keep none, and MCP101 and the lists
        # that are not valid MCP name their clients only there): one read per run of this server.
        from scanner.measure.verdicts import client_effects, verdict_codes

        codes = set(verdict_codes())
        present = {
            row.run_id: [
                f
                for f in store.findings(server=server, run=row.run_id)
                if f.code in codes and visible(f.code, preview) and client_effects(f)
            ]
            for row in found
            if row.ok
        }
        told = store.scans_instructions_tokens([row.scan_id for row in found if row.ok])
        clients = _clients(store, [(row.toolset_sha256, row.tokens, told.get(row.scan_id)) for row in found if row.ok])
    loads = {row.run_id: _loads(present.get(row.run_id, [])) for row in found if row.ok}
    return [
        {
            "run": row.run_id,
            "scanned_at": row.scanned_at,
            "outcome": row.outcome,
            "detail": row.detail,
            "transport": row.transport,
            "era": row.era,
            "protocol_version": row.protocol_version,
            "version": row.server_version,
            "tools": row.tools_count,
            **{provider: row.tokens.get(provider) for provider in PROVIDERS},
            "score": scores[row.scan_id].score if row.scan_id in scores else None,
            # A scan that did not answer has no findings to count: nothing, not 0/0/0.
            "problems": row.problems if row.ok else None,
            "warnings": row.warnings if row.ok else None,
            "notes": row.notes if row.ok else None,
            "will_it_load": loads[row.run_id][0] if row.run_id in loads else None,
            "verdicts": loads[row.run_id][1] if row.run_id in loads else None,
            "clients": clients.get(_key(row.toolset_sha256, told.get(row.scan_id))) if row.ok else None,
            # Every registered per-scan metric by name; None where the scan did not measure it.
            **{name: row.metrics.get(name) for name in scan_metrics.METRICS},
            "toolset_sha256": row.toolset_sha256,
            "lane": row.lane,
            "lanes": lanes_text(row.lanes),
            **_ran(row.ran),
            "stderr_tail": list(row.stderr_tail),
        }
        for row in found
    ]


def stderr_note(rows: list[dict[str, Any]]) -> str:
    """The newest scan's stderr tail under a history table, when it has one: escaped, one line each (the stored
    tail is already normalised and scrubbed of secrets)."""
    if not rows or not rows[-1].get("stderr_tail"):
        return ""
    last = rows[-1]
    lines = [f"stderr of run {last['run']} ({last['outcome']}), last lines:"]
    lines += [f"  | {clean(line)}" for line in last["stderr_tail"]]
    return "\n".join(lines) + "\n"


def next_step_note(server: str, rows: list[dict[str, Any]], width: int | None = None) -> str:
    """Under a history table (rows oldest first), when the newest scan did not read a list: what to do so the next
    one does, as the report's server page and ``check`` say it (the ``FATHOM_SECRET_...`` variable for an HTTP 401,
    the flag for a skip); wrapped to ``width``."""
    import textwrap

    from scanner.report.nextstep import next_step

    if not rows or rows[-1].get("outcome") in (None, "ok"):
        return ""
    last = rows[-1]
    step = clean(next_step(server, last["outcome"], last.get("detail") or ""))
    text = f"next step (run {last['run']}, {last['outcome']}): {step}"
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) if width else [text]
    return "".join(f"{line}\n" for line in lines)


def rules() -> list[dict[str, Any]]:
    """The rule catalogue in code order, one row per rule (``fathom rules``)."""
    from scanner.rules import RULES

    return [
        {
            "code": rule.code,
            "severity": rule.severity.label,
            "status": rule.status,
            "slug": rule.slug,
            "scope": str(rule.scope),
            "hint": rule.hint,
            "doc": rule.doc,
        }
        for rule in RULES.values()
    ]


def rule_code(text: str) -> str:
    """The catalogue code of ``text``, a rule code (``mcp205``) or slug (``param-untyped``); an unknown one is an
    :class:`InputError` (exit 2) naming the nearest code or slug, so a typo never answers "(none)"."""
    import difflib

    from scanner.rules import RULES

    wanted = text.strip()
    for rule in RULES.values():
        if wanted.upper() == rule.code or wanted.lower() == rule.slug:
            return rule.code
    names = [*RULES, *(rule.slug for rule in RULES.values())]
    if wanted[:3].upper() == "MCP":  # a code: a letter O typed for a zero is the usual slip
        key = "MCP" + wanted[3:].upper().replace("O", "0")
        near = [key] if key in RULES else difflib.get_close_matches(key, names, n=1)
    else:
        near = difflib.get_close_matches(wanted.lower(), names, n=1)
    hint = f"did you mean {near[0]}? " if near else ""
    raise InputError(f"no rule {clean(wanted)!r}; {hint}`fathom rules` lists them")


def findings(
    db_url: str,
    *,
    rule: str | None,
    server: str | None,
    since: datetime | None,
    run: int | None,
    severity: Severity | None = None,
    still_open: bool = False,
    preview: bool = False,
) -> list[dict[str, Any]]:
    """Findings over time; ``rule`` is checked against the catalogue first (:func:`rule_code`). Preview rules'
    findings only with ``preview`` or when their rule is asked for by code, each then marked (``status``,
    ``precision``); every row carries its rule's ``status``."""
    if run is None:
        return list(
            finding_stream(
                db_url, rule=rule, server=server, since=since, severity=severity, still_open=still_open, preview=preview
            )
        )
    code = rule_code(rule) if rule is not None else None
    with open_store(db_url) as store:
        found = store.findings(rule=code, server=server, since=since, run=run, severity=severity, still_open=still_open)
    return [_finding(row) for row in only_visible(found, preview, asked=code)]


def finding_stream(
    db_url: str,
    *,
    rule: str | None,
    server: str | None,
    since: datetime | None,
    severity: Severity | None = None,
    still_open: bool = False,
    preview: bool = False,
) -> Iterator[dict[str, Any]]:
    """:func:`findings` over the whole history (no run), row by row as the store reads them a chunk of servers
    at a time: what is held is one chunk, however many servers the database has. The rule is checked (an
    :class:`InputError`) before the first row is asked for."""
    code = rule_code(rule) if rule is not None else None

    def rows() -> Iterator[dict[str, Any]]:
        with open_store(db_url) as store:
            for chunk in store.finding_chunks(
                rule=code, server=server, since=since, severity=severity, still_open=still_open
            ):
                yield from (_finding(row) for row in only_visible(chunk, preview, asked=code))

    return rows()


def _finding(row: FindingRow) -> dict[str, Any]:
    return {
        "server": row.server,
        "code": row.code,
        "rule": row.rule,
        "severity": row.severity.label,
        "tool": row.tool,
        "message": row.message,
        "hint": row.hint,
        "pointer": row.pointer,
        "details": dict(row.details),
        "run": row.run_id,
        "first_seen_run": row.first_seen_run,
        "first_seen_at": row.first_seen_at,
        "gone_run": row.gone_run,
        "gone_at": row.gone_at,
        **mark(row.code),
    }


def finding_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The table's columns for :func:`findings`: with ``status`` when a preview finding is shown."""
    if any(row.get("status") == "preview" for row in rows):
        return [*FINDING_COLUMNS[:3], "status", *FINDING_COLUMNS[3:]]
    return FINDING_COLUMNS


FINDING_NEW, FINDING_FIXED, FINDING_GONE = "finding new", "finding fixed", "finding gone with the tool"
_FINDING_ORDER = {FINDING_NEW: 0, FINDING_FIXED: 1, FINDING_GONE: 2}


def diff(
    db_url: str, server: str, from_run: int | None, to_run: int | None, preview: bool = False
) -> list[dict[str, Any]]:
    """One row per change: the two scans, registry and server versions, outcome changes on the way, tools
    renamed/added/removed/changed (a rename is one row), token deltas, findings new/fixed/gone with the tool
    (grouped by rule; preview rules' only with ``preview``, each marked ``[preview: ...]``)."""
    with open_store(db_url) as store:
        change = store.diff(server, from_run, to_run)
    rows: list[dict[str, Any]] = []
    if change.from_run is not None:
        for label, before, after in (
            ("registry version", change.from_registry_version, change.to_registry_version),
            ("server version", change.from_version, change.to_version),
        ):
            if before != after:
                rows.append({"change": label, "tool": None, "detail": f"{before or '-'} → {after or '-'}"})
    rows += [
        {"change": "outcome", "tool": None, "detail": f"run {run}: {before} → {after}"}
        for run, before, after in change.outcome_changes
    ]
    if not change.tools_compared:
        failed = [
            f"run {run} ended {outcome}"
            for run, outcome in ((change.from_run, change.from_outcome), (change.to_run, change.to_outcome))
            if run is not None and outcome != "ok"
        ]
        rows.append({"change": "tools not compared", "tool": None, "detail": "; ".join(failed)})
    rows += [
        {
            "change": "tool renamed",
            "tool": new,
            "detail": f"from {old}: {_rename_detail(change.renamed_fields.get(new))}",
        }
        for old, new in change.tools_renamed
    ]
    rows += [{"change": "tool added", "tool": name, "detail": ""} for name in change.tools_added]
    rows += [{"change": "tool removed", "tool": name, "detail": ""} for name in change.tools_removed]
    rows += [
        {"change": "tool changed", "tool": name, "detail": ", ".join(fields)} for name, fields in change.tools_changed
    ]
    for provider, delta in change.token_deltas.items():
        if delta:
            spent, spends = change.tokens_from.get(provider, 0), change.tokens_to.get(provider, 0)
            rows.append({"change": "tokens", "tool": None, "detail": f"{provider} {spent:,} → {spends:,} ({delta:+,})"})
    # Findings grouped by rule: a rule's new, fixed and gone-with-the-tool findings together, code by code, tools in
    # order. A finding of a removed tool is not "fixed": it went with the tool.
    found = [
        *((FINDING_NEW, f) for f in change.findings_new),
        *((FINDING_FIXED, f) for f in change.findings_fixed),
        *((FINDING_GONE, f) for f in change.findings_gone_with_tool),
    ]
    found = [(label, f) for label, f in found if visible(f.code, preview)]
    found.sort(key=lambda item: (item[1].code, _FINDING_ORDER[item[0]], item[1].tool or ""))
    rows += [
        {"change": label, "tool": f.tool, "detail": f"{f.code} {f.rule}{tag(f.code)}: {f.message}"}
        for label, f in found
    ]
    for side, lanes in (("from", change.lanes_from), ("to", change.lanes_to)):
        if lanes:
            rows.append({"change": f"lanes ({side})", "tool": None, "detail": lanes_text(lanes)})
    sides = [
        _side(change.from_run, change.from_outcome, change.from_version, change.from_registry_version),
        _side(change.to_run, change.to_outcome, change.to_version, change.to_registry_version),
    ]
    header = {"change": "runs", "tool": None, "detail": " → ".join(sides)}
    return [header, *rows]


def _rename_detail(fields: tuple[str, ...] | None) -> str:
    """What changed with a rename: nothing else (``same description and inputSchema``), or the fields that did
    (``description, inputSchema changed too``)."""
    if not fields:
        return "same description and inputSchema"
    return f"{', '.join(fields)} changed too"


def _side(run: int | None, outcome: str | None, version: str | None, registry_version: str | None) -> str:
    """``run 3 (ok, version 1.0.13, registry 1.0.31)``; ``no earlier scan to compare with`` when there is none
    to compare with (never "run None")."""
    if run is None:
        return "no earlier scan to compare with"
    facts = [part for part in (outcome, f"version {version or '-'}") if part]
    if registry_version:
        facts.append(f"registry {registry_version}")
    return f"run {run} ({', '.join(facts)})"
