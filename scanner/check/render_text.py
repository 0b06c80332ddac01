"""``fathom check`` in a terminal, fitted to its width (``$COLUMNS``, the terminal's, else 80; :func:`fit`).

First a one-line summary (the score, the findings, the tokens per turn, whether every client loads the list, the
gates), so a reader knows where the list stands before scrolling; then the findings worst first under ``1 problem,
2 warnings, 3 notes`` (or ``Nothing a model would stumble over``): a rule firing on more than five tools is shown
once with its count (``--verbose`` lists each); with ``--preview``, preview findings are tagged ``[preview]``,
counted apart (``+ 3 preview``) and followed by what preview means and each rule's measured precision. Then
whether each client loads the list, the score (the leaderboard's) and what each rule cost, what the list costs
(tokens per provider, both Claude tokenizer generations; each client's figure; the largest tools, every tool with
``--tools``; how each count is made with ``--verbose``), the findings set aside as ignored (with why), the
comparison with a ``--baseline``, and every gate asked for. Colour only when asked (on a TTY); every string from
the list goes through :func:`scanner.textsafe.clean`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from scanner.check.groups import FindingGroup, group_findings
from scanner.check.result import CheckResult, Comparison, IgnoredFinding
from scanner.models import (
    PROVIDER_LABELS,
    PROVIDER_SHORT,
    CheckReport,
    Finding,
    ScanOutcome,
    Severity,
    Summary,
    ToolCost,
)
from scanner.report.text import ERA_WORDS
from scanner.rules.catalogue import precision_label
from scanner.rules.registry import is_preview
from scanner.textsafe import clean

_SEVERITY_STYLE = {Severity.PROBLEM: "31;1", Severity.WARNING: "33;1", Severity.NOTE: "36"}


class _Painter:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if self.colour else text


def server_lines(outcome: ScanOutcome, paint: _Painter) -> list[str]:
    name = clean(outcome.server_name or "(no serverInfo name)")
    version = f" {clean(outcome.server_version)}" if outcome.server_version else ""
    parts = [f"{outcome.transport}"]
    if outcome.protocol_version:
        era = ERA_WORDS.get(outcome.era or "", outcome.era or "unknown handshake")
        parts.append(f"protocol {clean(outcome.protocol_version)} ({era})")
    if outcome.capability_profile:
        parts.append(f"client profile {outcome.capability_profile}")
    total = outcome.timings_ms.get("total")
    if total is not None:
        # A server that ignores a closed stdin costs the shutdown grace; that is not its answer time.
        stopping = outcome.timings_ms.get("shutdown", 0.0)
        parts.append(f"{total - stopping:.0f} ms" + (f" (+{stopping:.0f} ms to stop)" if stopping >= 100 else ""))
    return [paint(f"Server: {name}{version}", "1"), "  " + " · ".join(parts)]


def cost_lines(
    report: CheckReport,
    paint: _Painter,
    *,
    verbose: bool = False,
    all_tools: bool = False,
    raw_tools: Sequence[Any] | None = None,
) -> list[str]:
    """Tokens per turn per provider (how each was counted with ``--verbose``), what each client sends, the
    server's instructions and the largest tools."""
    lines = [paint("Tokens per turn", "1")]
    labels = {provider: PROVIDER_SHORT.get(provider, provider) for provider in report.tokens}
    width = max(len(label) for label in labels.values()) + 2
    for provider, count in report.tokens.items():
        lines.append(f"  {labels[provider]:<{width}}{count.tokens:>9,}")
        if verbose:
            lines.append(f"  {'':<{width}}{'':>9}   {paint(count.method, '2')}")
    dearest = max(report.tokens.values(), key=lambda count: count.tokens)
    tools = f"{report.tools_count} tool{'' if report.tools_count == 1 else 's'}"
    share = f"{report.context_share * 100:.1f} % of a 200k context"
    lines.append(f"  {tools} · {share} ({labels[dearest.provider]})")
    if not verbose:
        lines.append(paint("  (how each count is made, and each client's: --verbose; docs/tokens.md)", "2"))
    lines += client_lines(report, paint, verbose=verbose, tools=raw_tools)
    if report.instructions is not None:
        lines += ["", paint("Instructions (the server's, read as a system text every turn)", "1")]
        for provider, count in report.instructions.tokens.items():
            lines.append(f"  {PROVIDER_SHORT.get(provider, provider):<{width}}{count.tokens:>9,}")
            if verbose:
                lines.append(f"  {'':<{width}}{'':>9}   {paint(count.method, '2')}")
        lines.append(f"  {instructions_line(report, dearest.provider)}")
    shown = report.tools_by_cost if all_tools else report.largest_tools
    if shown:
        title = "Tools, most expensive first" if all_tools else "Largest tools"
        lines += ["", paint(title, "1")]
        lines += _cost_table(shown, list(report.tokens))
    return lines


def finding_lines(report: CheckReport, paint: _Painter, *, verbose: bool = False, ignored: int = 0) -> list[str]:
    """Findings worst first under their headline; a rule on more than five tools once, with its count."""
    lines = [paint(headline(report.findings) + (f" ({ignored} ignored)" if ignored else ""), "1")]
    for item in group_findings(report.findings, verbose=verbose):
        finding = item.first if isinstance(item, FindingGroup) else item
        if isinstance(item, FindingGroup):
            where = f" · {clean(item.summary())}"
        else:
            where = f" · {clean(finding.tool)}" if finding.tool is not None else ""
            if finding.tool is None and finding.pointer == "instructions":
                where = " · the server's instructions"
        label = paint(f"{finding.severity.label:<8}", _SEVERITY_STYLE[finding.severity])
        tag = paint(" [preview]", "2") if is_preview(finding.code) else ""
        lines.append(f"  {label} {finding.code} {finding.rule}{tag}{where}")
        prefix = "e.g. " if isinstance(item, FindingGroup) else ""
        lines.append(f"{FINDING_INDENT}{prefix}{clean(finding.message)}")
        lines.append(f"{FINDING_INDENT}{paint('fix: ' + clean(finding.hint), '2')}")
    if not verbose and any(isinstance(item, FindingGroup) for item in group_findings(report.findings)):
        lines += ["", paint("  (rules firing on more than 5 tools are shown once; --verbose lists each)", "2")]
    previews = list(dict.fromkeys(finding.code for finding in report.findings if is_preview(finding.code)))
    if previews:
        lines += ["", paint(f"  {PREVIEW_MEANING}", "2")]
        lines += [paint(f"    {code}: {precision_label(code)}", "2") for code in previews]
    return lines


FINDING_INDENT = " " * 11
"""Where a finding's message and fix start: under its code, past ``  warning  ``."""


PREVIEW_MEANING = (
    "[preview]: a rule under 80 % right on hand-labelled real tool lists, or new; shown because of --preview, "
    "never counted in the score or a gate."
)


def headline(findings: tuple[Finding, ...]) -> str:
    """``2 warnings, 1 note``: the scored findings counted; ``+ 3 preview`` when preview findings are shown."""
    scored = [finding for finding in findings if not is_preview(finding.code)]
    line = Summary.of(scored).headline()
    extra = len(findings) - len(scored)
    return line + (f" (+ {extra} preview)" if extra else "")


def client_lines(
    report: CheckReport, paint: _Painter, *, verbose: bool = False, tools: Sequence[Any] | None = None
) -> list[str]:
    """What each client sends per turn (scanner.measure.clients): at rest and, when it defers, with 3 to 5 tools loaded;
    what the server controls under deferral; how each figure is made with ``verbose``."""
    from scanner.measure.clients import deferral_summary, report_clients

    costs = report_clients(report, tools)
    if not costs:
        return []
    lines = ["", paint("Per client (what each sends per turn)", "1")]
    for cost in costs:
        how = _loaded_words(cost.loaded_low, cost.loaded_high, report.tools_count) if cost.deferred else "every tool"
        lines.append(f"  {cost.label}: {cost.tokens:,} ({how})")
        if verbose:
            lines.append(f"    {paint(cost.method, '2')}")
    lines += [f"  {clean(line)}" for line in deferral_summary(costs)]
    return lines


def _loaded_words(low: int, high: int, tools: int) -> str:
    """``deferred, 304-420 with 3-5 loaded``; for a list of fewer than 5 tools what can be loaded: ``deferred, 304
    with all 3 loaded`` (never "304-304 with 3-5 loaded"), ``deferred, 304-350 with 3-4 loaded``."""
    if tools <= 3 or low == high:
        loaded = ("its one tool loaded" if tools == 1 else f"all {tools} loaded") if tools <= 3 else "3-5 loaded"
        return f"deferred, {high:,} with {loaded}"
    return f"deferred, {low:,}-{high:,} with 3-{min(tools, 5)} loaded"


def instructions_line(report: CheckReport, provider: str) -> str:
    """``tools 2,575 + instructions 310 tokens per turn (Claude 4.7+)``: both costs with one provider."""
    assert report.instructions is not None
    tools = report.tokens[provider].tokens
    extra = report.instructions.tokens[provider].tokens
    chars = len(report.instructions.text)
    return (
        f"tools {tools:,} + instructions {extra:,} tokens per turn ({PROVIDER_SHORT.get(provider, provider)}); "
        f"instructions: {chars:,} characters"
    )


def _cost_table(costs: tuple[ToolCost, ...], providers: list[str]) -> list[str]:
    width = min(40, max(len(clean(cost.name)) for cost in costs))
    columns = [max(9, len(PROVIDER_SHORT.get(p, p)) + 2) for p in providers]
    header = "".join(f"{PROVIDER_SHORT.get(p, p):>{w}}" for p, w in zip(providers, columns, strict=True))
    out = [f"  {'':<{width}}{header}"]
    for cost in costs:
        name = clean(cost.name)
        name = name if len(name) <= width else name[: width - 1] + "…"
        counts = "".join(f"{cost.tokens.get(p, 0):>{w},}" for p, w in zip(providers, columns, strict=True))
        out.append(f"  {name:<{width}}{counts}")
    return out


def render(
    result: CheckResult,
    *,
    colour: bool = False,
    verbose: bool = False,
    all_tools: bool = False,
    width: int | None = None,
) -> str:
    """The whole text report, each line wrapped to ``width`` columns (default :func:`text_width`): first the
    source and a one-line summary (score, findings, tokens, clients, gates), then the findings, whether each
    client loads the list, the score, what the list costs, ignored findings, the baseline and the gates."""
    paint = _Painter(colour)
    lines = [paint(f"Tool list: {clean(_shown(result.source))}", "1")] if result.outcome is None else []
    if result.outcome is not None:
        lines += server_lines(result.outcome, paint)
    if result.report is None:
        assert result.outcome is not None
        lines.append(
            paint(f"  {result.outcome.outcome.value}: {clean(result.outcome.detail)}", "31;1"),
        )
        return fit(lines, width)
    lines.append(summary_line(result))
    lines.append("")
    lines += finding_lines(result.report, paint, verbose=verbose, ignored=len(result.ignored))
    lines += verdict_lines(result, paint)
    lines += openai_strict_lines(result, paint)
    lines += score_lines(result, paint)
    lines += ["", *cost_lines(result.report, paint, verbose=verbose, all_tools=all_tools, raw_tools=result.tools)]
    lines += ignored_lines(result, paint)
    if result.comparison is not None:
        lines += comparison_lines(result.comparison, paint)
    if result.gates:
        lines += ["", paint("Gates", "1")]
        for gate in result.gates:
            mark = paint("passed", "32;1") if gate.passed else paint("FAILED", "31;1")
            lines.append(f"  {mark} {gate.gate}: {clean(gate.message)}")
    return fit(lines, width)


def _shown(source: str) -> str:
    """``source`` as the reader typed it, short: a file under the working directory relative to it."""
    with contextlib.suppress(OSError, ValueError):
        if os.path.isabs(source) and os.path.isfile(source):
            relative = os.path.relpath(source)
            if not relative.startswith(os.pardir):
                return relative
    return source


def summary_line(result: CheckResult) -> str:
    """``Score 78.5 · 11 warnings, 15 notes · 7,088 tokens/turn (Claude 4.7+) · every client loads it · gates
    passed``: what a reader wants first, on one line."""
    from scanner.measure.verdicts import result_verdicts

    report = result.report
    assert report is not None
    score = result.score
    parts = [f"Score {score.score:.1f}" if score is not None else "No score (no tools)"]
    parts.append(headline(report.findings))
    dearest = max(report.tokens.values(), key=lambda count: count.tokens)
    parts.append(f"{dearest.tokens:,} tokens/turn ({PROVIDER_SHORT.get(dearest.provider, dearest.provider)})")
    verdicts = result_verdicts(result)
    refused = [verdict.label for verdict in verdicts if verdict.state == "refuses"]
    dropped = [verdict.label for verdict in verdicts if verdict.state == "drops"]
    if refused:
        parts.append("refused by " + ", ".join(refused))
    elif dropped:
        parts.append("tools dropped by " + ", ".join(dropped))
    elif verdicts:
        parts.append("every client loads it")
    if result.gates:
        failed = sum(1 for gate in result.gates if not gate.passed)
        parts.append(f"{failed} of {len(result.gates)} gates FAILED" if failed else "gates passed")
    return "  " + " · ".join(parts)


_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def text_width() -> int:
    """The width text output fits: ``$COLUMNS`` when set, else the terminal's, else 80 (a log, a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return int(columns)
    if sys.stdout is not None and sys.stdout.isatty():
        return max(40, shutil.get_terminal_size().columns)
    return 80


def fit(lines: list[str], width: int | None = None) -> str:
    """The lines joined, each longer than ``width`` (colour escapes not counted) wrapped at spaces, its
    continuation indented two more than the line (a finding's header goes on under its code, a finding's message
    and fix under themselves). A word longer than the width (a URL, a pointer) is left whole rather than cut."""
    width = width or text_width()
    out: list[str] = []
    for line in lines:
        bare = _ESCAPE.sub("", line)
        if len(bare) <= width:
            out.append(line)
            continue
        indent = len(bare) - len(bare.lstrip(" "))
        if indent == len(FINDING_INDENT) or bare.lstrip(" ").startswith(tuple(level.label for level in Severity)):
            hang = len(FINDING_INDENT)
        elif indent > len(FINDING_INDENT):  # a line set deep (--verbose's method under its count) goes on under itself
            hang = indent
        else:
            hang = indent + 2
        out += _wrap(line, width, indent, hang)
    return "\n".join(out) + "\n"


_UNIT = re.compile(r"(\d[\d,.]*) (%|ms|s|KB|MB|MiB|GB|tokens?|characters|chars|px|tools?)(?=[\s,;:.)]|$)")


def _pieces(word: str, most: int) -> list[str]:
    """``word`` cut into pieces of at most ``most`` visible columns (colour escapes kept with the character
    after them, never split): a path or URL longer than a row still fits the width."""
    if len(_ESCAPE.sub("", word)) <= most:
        return [word]
    pieces: list[str] = []
    current, seen, at = "", 0, 0
    while at < len(word):
        escape = _ESCAPE.match(word, at)
        if escape is not None:
            current += escape.group(0)
            at = escape.end()
            continue
        if seen == most:
            pieces.append(current)
            current, seen = "", 0
        current += word[at]
        seen += 1
        at += 1
    pieces.append(current)
    return pieces


def _wrap(line: str, width: int, indent: int, hang: int) -> list[str]:
    """``line`` (``indent`` spaces, then words) in rows of at most ``width`` visible columns, rows after the
    first indented by ``hang``."""
    rows: list[str] = []
    current, seen, empty = " " * indent, indent, True
    # A number and its unit ("8 %", "64.9 ms", "1,711 tokens") stay on one row: joined by a no-break space for the
    # split, a plain space again in the row; a word longer than a row (a path, a URL) is cut to fit.
    joined = _UNIT.sub("\\1\u00a0\\2", line.lstrip(" ")).split(" ")
    words = [piece.replace("\u00a0", " ") for word in joined for piece in _pieces(word, max(width - hang, 20))]
    for word in words:
        size = len(_ESCAPE.sub("", word))
        if not empty and seen + 1 + size > width:
            rows.append(current)
            current, seen, empty = " " * hang, hang, True
        current += ("" if empty else " ") + word
        seen += size + (0 if empty else 1)
        empty = False
    rows.append(current)
    return rows


def verdict_lines(result: CheckResult, paint: _Painter) -> list[str]:
    """Will it load? Each client's verdict on the list (scanner.measure.verdicts), the reasons under those that do
    not."""
    from scanner.measure.verdicts import render_text, result_verdicts

    block = [clean(line) for line in render_text(result_verdicts(result))]
    return ["", paint(block[0], "1"), *block[1:]] if block else []


def openai_strict_lines(result: CheckResult, paint: _Painter) -> list[str]:
    """``check --openai-strict``: whether OpenAI's strict mode takes each tool (scanner.providers.strict)."""
    from scanner.providers.strict import render_text, result_view

    view = result_view(result)
    if view is None:
        return []
    block = [clean(line) for line in render_text(view)]
    return ["", paint(block[0], "1"), *block[1:]]


def score_lines(result: CheckResult, paint: _Painter) -> list[str]:
    """``Score 93.5 / 100`` and what each rule cost (the points fixing it would give back)."""
    score = result.score
    if score is None:
        if result.report is None:
            return []
        from scanner.measure.score import SCORE_VERSION

        version = paint(f"  (leaderboard formula v{SCORE_VERSION})", "2")
        return ["", paint("No score", "1") + ": the list has no tools" + version]
    lines = ["", paint(f"Score {score.score:.1f} / 100", "1") + paint(f"  (leaderboard formula v{score.version})", "2")]
    lines.append(
        f"  mean tool {score.mean_tool * 100:.1f} · worst tool {score.worst_tool * 100:.1f} · "
        f"list penalty {score.list_penalty:g} · cost {score.cost_penalty:g} ({score.tokens:,} tokens per turn)"
    )
    if score.refused:
        from scanner.measure.score import REFUSED_CAP

        refused = f"a client refuses the whole list ({', '.join(score.refused)})"
        if score.score < REFUSED_CAP:  # the cap did not bind: say it is a ceiling, not what made the score
            lines.append(f"  at most {REFUSED_CAP:g} while {refused}; this list scores below that anyway")
        else:
            lines.append(f"  capped at {REFUSED_CAP:g}: {refused}")
    for cost in result.rule_costs:
        found = f"{cost.findings} finding{'' if cost.findings == 1 else 's'}"
        lines.append(f"  {-cost.points:>6.1f}  {cost.code} {cost.rule} ({found})")
    return lines


def ignored_lines(result: CheckResult, paint: _Painter) -> list[str]:
    """Findings kept out of the list and the gates, one line each with the reason (the score counts them)."""
    if not result.ignored:
        return []
    lines = ["", paint(f"Ignored ({len(result.ignored)}; still counted in the score)", "1")]
    groups: dict[tuple[str, str], list[IgnoredFinding]] = {}
    for item in result.ignored:  # one line per rule and reason: 23 "rule ignored" lines were one fact
        groups.setdefault((item.finding.code, item.reason), []).append(item)
    for (_, reason), items in groups.items():
        finding = items[0].finding
        tools = [clean(item.finding.tool) for item in items if item.finding.tool is not None]
        if len(items) == 1:
            where = f" · {tools[0]}" if tools else ""
        else:
            named = ", ".join(tools[:3]) + (f" and {len(tools) - 3} more" if len(tools) > 3 else "")
            where = f" · {len(items)} findings" + (f": {named}" if named else "")
        tag = " [preview]" if is_preview(finding.code) else ""
        lines.append(f"  {finding.severity.label:<8} {finding.code} {finding.rule}{tag}{where}: {clean(reason)}")
    return lines


def _delta(before: int, after: int) -> str:
    change = after - before
    percent = f", {100.0 * change / before:+.1f} %" if before else ""
    return f"{before:,} -> {after:,} ({change:+,}{percent})"


FOLD = 5
"""Rows of one kind shown in the baseline comparison before the rest are counted in one line."""


def _folded(rows: list[str], noun: str) -> list[str]:
    """At most :data:`FOLD` rows, then one line counting the rest (``--format json`` lists every one)."""
    if len(rows) <= FOLD:
        return rows
    return [*rows[:FOLD], f"  ... and {len(rows) - FOLD} more {noun} (--format json lists every one)"]


def comparison_lines(comparison: Comparison, paint: _Painter) -> list[str]:
    """What changed since the baseline: tokens per provider, tools (a changed tool says what changed), findings
    new, fixed and gone with their tool; each kind folded past five rows."""
    lines = ["", paint(f"Since the baseline {clean(comparison.baseline)}", "1")]
    if comparison.score_before is not None and comparison.score_after is not None:
        lines.append(
            f"  score {comparison.score_before:.1f} -> {comparison.score_after:.1f} "
            f"({comparison.score_after - comparison.score_before:+.1f})"
        )
    lines.append(f"  tools {comparison.tools_before} -> {comparison.tools_after}")
    for delta in comparison.tokens:
        lines.append(f"  {PROVIDER_LABELS.get(delta.provider, delta.provider)}: {_delta(delta.before, delta.after)}")
    dearest = next(iter(comparison.tokens), None)
    for change in ("added", "removed", "changed"):
        rows = []
        for tool in comparison.tools:
            if tool.change != change:
                continue
            what = f" ({', '.join(tool.fields)})" if tool.fields else ""
            cost = ""
            if dearest is not None:
                short = PROVIDER_SHORT.get(dearest.provider, dearest.provider)
                cost = f": {tool.delta(dearest.provider):+,} tokens, {short}"
            rows.append(f"  {change:<8} {clean(tool.name)}{what}{cost}")
        lines += _folded(rows, f"{change} tools")
    for label, found in (("new", comparison.new), ("fixed", comparison.fixed), ("gone", comparison.gone)):
        rows = []
        for finding in found:
            where = f" · {clean(finding.tool)}" if finding.tool is not None else ""
            with_tool = " (gone with the tool)" if label == "gone" else ""
            rows.append(f"  {label:<8} {finding.severity.label} {finding.code} {finding.rule}{where}{with_tool}")
        lines += _folded(rows, "gone with their tool" if label == "gone" else f"{label} findings")
    return lines
