"""``fathom check``'s one library call: :func:`run_check` gets the list a request names (a file, a server through
the MCP client, or a server's newest stored list), measures it (:func:`scanner.measure.toollist.measure`), and
returns both.

``--select``/``--ignore`` and the per-tool ignores of a config file never drop a finding: :func:`run_check`
measures every rule, then moves the findings the author chose not to see to :attr:`CheckResult.ignored` with the
reason (the score still counts them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace

from scanner.check.result import CheckRequest, CheckResult, IgnoredFinding, ToolIgnore
from scanner.errors import OutputError
from scanner.measure.toollist import measure, tool_label
from scanner.models import CONTEXT_WINDOW, CheckReport, Finding, Toolset


def run_check(request: CheckRequest) -> CheckResult:
    """Get the tool list the request names, measure it, and return both.

    A server that cannot be listed is not an exception: the result carries its outcome and no report.
    """
    if request.server is not None:
        return _stored_check(request)
    if request.entry is None:
        from scanner.check.toolsets import DEFAULT_MAX_BYTES, load_tools

        source = request.tools_file or "-"
        toolset = Toolset.from_tools(load_tools(source, request.max_bytes or DEFAULT_MAX_BYTES))
        label = "standard input" if source == "-" else source
        report, ignored = _measure(request, toolset)
        return CheckResult(report=report, tools=toolset.tools, source=label, ignored=ignored)

    import anyio

    from scanner import confine
    from scanner.mcp import ClientLimits, scan_server
    from scanner.packages.checkrun import check_entry, classify_check

    # A package runner's command runs as a scan runs it: the installer settings, the cause classifier.
    entry = check_entry(request.entry)
    # The project checked: its command names paths relative to it. A network of its own with a route out through
    # slirp4netns where there is one (never the host's loopback), else the host's (said by the CLI).
    with confine.room(workdir=os.getcwd(), offline=confine.outbound()[0]):
        scanned = anyio.run(scan_server, entry, request.limits or ClientLimits(), request.profile)
    outcome = classify_check(entry, scanned)
    if not outcome.ok or outcome.tools is None:
        from scanner.scan.lanes import scan_findings

        found = tuple(scan_findings(outcome))
        return CheckResult(report=None, outcome=outcome, source=entry.target(), outcome_findings=found)
    if request.save is not None:
        from scanner import safefile  # never through a symlink, inside the working tree (docs/ci.md)

        safefile.write_text(
            request.save,
            json.dumps({"tools": list(outcome.tools)}, indent=2) + "\n",
            label="--save",
            failed=f"cannot save the tool list to {request.save}",
        )
    toolset = Toolset.from_tools(list(outcome.tools))
    from scanner.measure.instructions import instructions_text

    text = instructions_text(outcome.extra)
    report, ignored = _measure(request, toolset, text, outcome.server_name)
    return CheckResult(
        report=report,
        ignored=ignored,
        tools=toolset.tools,
        outcome=outcome,
        source=entry.target(),
        instructions=text,
    )


def _stored_check(request: CheckRequest) -> CheckResult:
    """``--db DB --server NAME``: the server's newest stored list as the leaderboard has it, nothing re-measured.

    The tokens, each tool's cost and the findings (the toolset's under the run's scoring catalogue, and the scan's
    own) are the stored ones, so the score is the leaderboard's to the decimal. ``--select``/``--ignore`` and the
    per-tool ignores set findings aside as for any list (still scored).
    """
    from scanner.measure.instructions import text_sha256
    from scanner.models import InstructionsCost
    from scanner.rules.registry import check_prefixes
    from scanner.store import open_store

    assert request.db_url is not None and request.server is not None
    check_prefixes(request.select)
    check_prefixes(request.ignore)
    for tool_ignore in request.tool_ignores:
        check_prefixes(tool_ignore.rules)
    with open_store(request.db_url) as store:
        stored = store.stored_list(request.server)
    row = stored.row
    toolset = Toolset.from_tools(stored.tools)
    if toolset.sha256 != row.toolset_sha256:  # never score one list under another's name
        raise OutputError(f"{stored.server}: the stored tool list does not match its hash {row.toolset_sha256}")
    cost = None
    if stored.instructions is not None and stored.instructions_tokens:
        cost = InstructionsCost(
            text=stored.instructions,
            sha256=text_sha256(stored.instructions),
            tokens=stored.instructions_tokens,
        )
    most = max((count.tokens for count in stored.tokens.values()), default=0)
    report: CheckReport | None = CheckReport(
        tools_count=int(row.tools_count or 0),
        tokens=stored.tokens,
        context_share=most / CONTEXT_WINDOW,
        tool_costs=tuple(stored.tool_costs),
        findings=tuple(sorted(row.findings, key=lambda finding: finding.sort_key())),
        toolset_sha256=toolset.sha256,
        instructions=cost,
    )
    if not request.measure:
        report = None
    found = report.findings if report is not None else ()
    kept, ignored = _shown(partition(found, request.select, request.ignore, request.tool_ignores), request.preview)
    when = f", scanned {stored.scanned_at:%Y-%m-%d %H:%M}" if stored.scanned_at is not None else ""
    return CheckResult(
        report=replace(report, findings=kept) if report is not None else None,
        tools=toolset.tools,
        source=f"{stored.server} (stored: run {stored.run_id}, scan {stored.scan_id}{when})",
        ignored=ignored,
        instructions=stored.instructions,
    )


def _measure(
    request: CheckRequest, toolset: Toolset, instructions: str | None = None, server_name: str | None = None
) -> tuple[CheckReport | None, tuple[IgnoredFinding, ...]]:
    """Measure with every rule, then set aside what the request ignores (never dropped: the score counts it).
    MCP809 builds the clients' names from ``--server-key`` (or the config's), else the server's
    ``serverInfo.name``; a file has neither unless the request names one."""
    if not request.measure:
        return None, ()
    from scanner.rules.registry import check_prefixes

    check_prefixes(request.select)
    check_prefixes(request.ignore)
    for tool_ignore in request.tool_ignores:
        check_prefixes(tool_ignore.rules)
    key = request.server_key if request.server_key is not None else (server_name or "")
    report = measure(toolset, instructions=instructions, server_key=key)
    kept, ignored = _shown(
        partition(report.findings, request.select, request.ignore, request.tool_ignores), request.preview
    )
    return replace(report, findings=kept), ignored


def _shown(
    split: tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]], preview: bool
) -> tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]]:
    """Findings shown and ignored, less the preview rules' unless ``preview``: measured like every rule (the store
    keeps them), shown only when asked for, and never scored or gated either way (rules.md, status)."""
    kept, ignored = split
    if preview:
        return kept, ignored
    from scanner.rules.registry import is_preview

    return (
        tuple(finding for finding in kept if not is_preview(finding.code)),
        tuple(item for item in ignored if not is_preview(item.finding.code)),
    )


def stale_ignores(result: CheckResult, tool_ignores: Sequence[ToolIgnore]) -> list[str]:
    """The config's per-tool ignores that no longer apply, one sentence each: a tool the list does not have (the
    nearest name said), or an ignore that set no finding aside. A stale ignore is accepted, never silent."""
    import difflib

    if result.tools is None or not tool_ignores:
        return []
    names = [tool_label(tool, index) for index, tool in enumerate(result.tools)]
    used = set()
    for item in result.ignored:  # as partition() decides: the first per-tool ignore that matches sets it aside
        first = next((rule for rule in tool_ignores if rule.matches(item.finding)), None)
        if first is not None and first.reason == item.reason:
            used.add(first)
    out = []
    for rule in tool_ignores:
        scope = f"per-tool ignore of {rule.tool!r}" + (f" ({', '.join(rule.rules)})" if rule.rules else "")
        if rule.tool not in names:
            near = difflib.get_close_matches(rule.tool, names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            out.append(f"{scope}: the list has no tool of that name{hint}")
        elif rule not in used:
            out.append(f"{scope}: it set no finding aside (fixed? then remove it)")
    return out


def partition(
    findings: Sequence[Finding],
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    tool_ignores: Sequence[ToolIgnore] = (),
) -> tuple[tuple[Finding, ...], tuple[IgnoredFinding, ...]]:
    """Split findings into those shown and those ignored (with the reason), keeping their order."""
    from scanner.rules.registry import rule_selected

    kept: list[Finding] = []
    ignored: list[IgnoredFinding] = []
    for finding in findings:
        if not rule_selected(finding.code, select, ()):
            ignored.append(IgnoredFinding(finding, "rule not selected"))
        elif not rule_selected(finding.code, (), ignore):
            ignored.append(IgnoredFinding(finding, "rule ignored"))
        else:
            reason = next((rule.reason for rule in tool_ignores if rule.matches(finding)), None)
            if reason is None:
                kept.append(finding)
            else:
                ignored.append(IgnoredFinding(finding, reason))
    return tuple(kept), tuple(ignored)
