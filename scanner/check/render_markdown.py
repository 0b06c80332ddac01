"""``fathom check --format markdown``: the same report as a Markdown section, for a PR comment or a CI summary.

Server text is escaped for Markdown (table pipes, emphasis, HTML) and stripped of control characters; the
catalogue's own hints keep their code spans. A rule firing on more than five tools is one row with its count
(``--verbose`` lists each); ``--tools`` lists every tool's cost instead of the five largest.

With ``--baseline`` it is a PR comment: the gates and the changes since the baseline come first (tokens per
provider with their deltas, tools added, removed and changed with their cost deltas, findings new and fixed),
then the full report. The score (the leaderboard's) and what each rule cost, and the ignored findings with
their reasons, are always there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scanner.check.groups import FindingGroup, group_findings
from scanner.check.render_text import PREVIEW_MEANING, headline
from scanner.check.result import BaselineFinding, CheckResult, Comparison
from scanner.models import PROVIDER_LABELS, PROVIDER_SHORT, CheckReport, Finding
from scanner.rules import RULES
from scanner.rules.catalogue import precision_label
from scanner.rules.registry import is_preview
from scanner.textsafe import markdown_text


def md(text: object) -> str:
    """Text safe inside Markdown prose or a table cell, never cut: the ground floor's one Markdown escaping
    (:func:`scanner.textsafe.markdown_text`): no HTML, no links, no emphasis, no extra column, no @mention and no
    bare link a PR comment would make live (the text of a tool is a stranger's)."""
    return markdown_text(text)


def hint_cell(finding: Finding) -> str:
    """The "Fix" cell: the catalogue's own hint keeps its code spans; what comes before it (a finding's own fix,
    which quotes property names from the tool list) and any hint that is not the catalogue's (a stored or
    baseline finding) is a stranger's text, escaped whole."""
    rule = RULES.get(finding.code)
    hint = finding.hint
    if rule is not None and rule.hint and hint.endswith(rule.hint):
        return md(hint[: len(hint) - len(rule.hint)]) + markdown_text(rule.hint, code_spans=True)
    return md(hint)


def _code(finding: Finding | BaselineFinding) -> str:
    """``MCP104 slug``: from the catalogue in a fresh check, but a baseline's or the store's text otherwise."""
    return md(f"{finding.code} {finding.rule}")


def render(result: CheckResult, *, verbose: bool = False, all_tools: bool = False) -> str:
    out = [f"## Tool list check: {md(result.source)}", ""]
    outcome = result.outcome
    if outcome is not None:
        name = md(outcome.server_name or "(no serverInfo name)")
        version = f" {md(outcome.server_version)}" if outcome.server_version else ""
        era = f", protocol {md(outcome.protocol_version)} ({outcome.era})" if outcome.protocol_version else ""
        out += [f"**Server:** {name}{version} · {outcome.transport}{era}", ""]
        if result.report is None:
            out += [f"**{outcome.outcome.value}:** {md(outcome.detail)}", ""]
            return "\n".join(out)
    report = result.report
    assert report is not None
    score = result.score
    if score is not None:
        out += [f"**Score:** {score.score:.1f} / 100 (leaderboard formula v{score.version})", ""]
    else:
        out += ["**Score:** no score (the list has no tools)", ""]
    out += gate_lines(result)
    if result.comparison is not None:
        out += comparison_lines(result.comparison, list(report.tokens))
    out += ["| Provider | Tokens per turn | Method |", "|---|---:|---|"]
    for provider, count in report.tokens.items():
        out.append(f"| {PROVIDER_LABELS.get(provider, provider)} | {count.tokens:,} | {md(count.method)} |")
    out += ["", f"{report.tools_count:,} tools · {report.context_share * 100:.1f} % of a 200k context", ""]
    out += client_lines(report, result.tools)
    from scanner.measure.verdicts import render_markdown, result_verdicts

    out += render_markdown(result_verdicts(result), md)
    from scanner.providers import strict

    view = strict.result_view(result)
    out += strict.render_markdown(view, md) if view is not None else []
    if report.instructions is not None:
        out += ["**Instructions** (the server's, read as a system text every turn):", ""]
        out += ["| Provider | Tools | + Instructions | Method |", "|---|---:|---:|---|"]
        for provider, count in report.instructions.tokens.items():
            tools = report.tokens[provider].tokens if provider in report.tokens else 0
            label = md(PROVIDER_LABELS.get(provider, provider))
            out.append(f"| {label} | {tools:,} | {count.tokens:,} | {md(count.method)} |")
        out.append("")
    shown = report.tools_by_cost if all_tools else report.largest_tools
    if shown:
        providers = list(report.tokens)
        out += ["### Tools, most expensive first" if all_tools else "### Largest tools", ""]
        out.append("| Tool | " + " | ".join(md(PROVIDER_LABELS.get(p, p)) for p in providers) + " |")
        out.append("|---|" + "---:|" * len(providers))
        for cost in shown:
            counts = " | ".join(f"{cost.tokens.get(p, 0):,}" for p in providers)
            out.append(f"| {md(cost.name)} | {counts} |")
        out.append("")
    ignored = f" ({len(result.ignored)} ignored)" if result.ignored else ""
    out += [f"### {headline(report.findings)}{ignored}", ""]
    if report.findings:
        out += ["| Severity | Code | Tool | Finding | Fix |", "|---|---|---|---|---|"]
        for item in group_findings(report.findings, verbose=verbose):
            finding = item.first if isinstance(item, FindingGroup) else item
            if isinstance(item, FindingGroup):
                tool = md(item.summary())
            else:
                tool = md(finding.tool) if finding.tool is not None else "(list)"
                if finding.tool is None and finding.pointer == "instructions":
                    tool = "(instructions)"
            tag = " (preview)" if is_preview(finding.code) else ""
            out.append(
                f"| {finding.severity.label} | {_code(finding)}{tag} | {tool} | "
                f"{md(finding.message)} | {hint_cell(finding)} |"
            )
        out.append("")
        previews = list(dict.fromkeys(finding.code for finding in report.findings if is_preview(finding.code)))
        if previews:
            out += [f"_{md(PREVIEW_MEANING.replace('[preview]', '(preview)'))}_", ""]
            out += [f"- {md(code)}: {md(precision_label(code))}" for code in previews]
            out.append("")
    out += score_lines(result) + ignored_lines(result)
    return "\n".join(out)


def client_lines(report: CheckReport, tools: Sequence[Any] | None = None) -> list[str]:
    """What each client sends per turn (scanner.measure.clients): at rest, and with a typical 3 to 5 tools loaded;
    then what the server controls under deferral."""
    from scanner.measure.clients import deferral_summary, report_clients

    costs = report_clients(report, tools)
    if not costs:
        return []
    out = ["**Per client** (what each client sends per turn):", ""]
    out += ["| Client | Defers | Per turn | With 3-5 tools loaded | Method |", "|---|---|---:|---:|---|"]
    for cost in costs:
        loaded = f"{cost.loaded_low:,}-{cost.loaded_high:,}" if cost.deferred else f"{cost.tokens:,}"
        defers = "yes" if cost.deferred else "no"
        out.append(f"| {md(cost.label)} | {defers} | {cost.tokens:,} | {loaded} | {md(cost.method)} |")
    summary = deferral_summary(costs)
    return [*out, "", *([f"- {md(line)}" for line in summary] + [""] if summary else [])]


def gate_lines(result: CheckResult) -> list[str]:
    if not result.gates:
        return []
    out = ["| Gate | Result | Detail |", "|---|---|---|"]
    for gate in result.gates:
        name = markdown_text(f"`{gate.gate}`", code_spans=True)
        out.append(f"| {name} | {'passed' if gate.passed else '**failed**'} | {md(gate.message)} |")
    return [*out, ""]


def score_lines(result: CheckResult) -> list[str]:
    score = result.score
    if score is None:
        return ["### No score", "", "The list has no tools.", ""] if result.report is not None else []
    out = [
        f"### Score {score.score:.1f} / 100",
        "",
        f"Mean tool {score.mean_tool * 100:.1f} · worst tool {score.worst_tool * 100:.1f} · "
        f"list penalty {score.list_penalty:g} · cost {score.cost_penalty:g} ({score.tokens:,} tokens per turn).",
        "",
    ]
    if result.rule_costs:
        out += ["| Rule | Findings | Points it costs |", "|---|---:|---:|"]
        out += [
            f"| {md(f'{cost.code} {cost.rule}')} | {cost.findings} | {-cost.points:.1f} |" for cost in result.rule_costs
        ]
        out.append("")
    return out


def ignored_lines(result: CheckResult) -> list[str]:
    if not result.ignored:
        return []
    out = [f"### Ignored ({len(result.ignored)}; still counted in the score)", ""]
    out += ["| Severity | Code | Tool | Reason |", "|---|---|---|---|"]
    for item in result.ignored:
        finding = item.finding
        tool = md(finding.tool) if finding.tool is not None else "(list)"
        tag = " (preview)" if is_preview(finding.code) else ""
        out.append(f"| {finding.severity.label} | {_code(finding)}{tag} | {tool} | {md(item.reason)} |")
    return [*out, ""]


def _signed(value: int) -> str:
    return f"{value:+,}" if value else "0"


def comparison_lines(comparison: Comparison, providers: list[str]) -> list[str]:
    """The PR comment's head: what changed since the baseline."""
    out = [f"### Since the baseline ({md(comparison.baseline)})", ""]
    if comparison.score_before is not None and comparison.score_after is not None:
        change = comparison.score_after - comparison.score_before
        out += [f"Score {comparison.score_before:.1f} → {comparison.score_after:.1f} ({change:+.1f})", ""]
    out += [f"Tools {comparison.tools_before} → {comparison.tools_after}", ""]
    out += ["| Provider | Baseline | Now | Change |", "|---|---:|---:|---:|"]
    for delta in comparison.tokens:
        percent = f" ({delta.percent:+.1f} %)" if delta.percent is not None else ""
        label = md(PROVIDER_LABELS.get(delta.provider, delta.provider))
        out.append(f"| {label} | {delta.before:,} | {delta.after:,} | {_signed(delta.delta)}{percent} |")
    out.append("")
    if comparison.tools:
        out += ["| Tool | Change | " + " | ".join(md(PROVIDER_SHORT.get(p, p)) for p in providers) + " |"]
        out.append("|---|---|" + "---:|" * len(providers))
        rows = []
        for kind in ("added", "removed", "changed"):
            for tool in comparison.tools:
                if tool.change == kind:
                    deltas = " | ".join(_signed(tool.delta(p)) for p in providers)
                    what = f" ({md(', '.join(tool.fields))})" if tool.fields else ""
                    rows.append(f"| {md(tool.name)} | {tool.change}{what} | {deltas} |")
        out += _folded(rows, "tools", len(providers) + 2)
        out.append("")
    else:
        out += ["No tool added, removed or changed.", ""]
    if comparison.new or comparison.fixed or comparison.gone:
        out += ["| Finding | Severity | Code | Tool | Message |", "|---|---|---|---|---|"]
        rows = []
        for finding in comparison.new:
            name = md(finding.tool) if finding.tool is not None else "(list)"
            rows.append(f"| new | {finding.severity.label} | {_code(finding)} | {name} | {md(finding.message)} |")
        for label, found in (("fixed", comparison.fixed), ("gone with the tool", comparison.gone)):
            for item in found:
                name = md(item.tool) if item.tool is not None else "(list)"
                rows.append(f"| {label} | {item.severity.label} | {_code(item)} | {name} | {md(item.message)} |")
        out += _folded(rows, "findings", 5)
        out.append("")
    else:
        out += ["No finding new or fixed.", ""]
    return out


FOLD = 5
"""Rows of one table in the PR comment shown before the rest are counted in one row."""


def _folded(rows: list[str], noun: str, columns: int) -> list[str]:
    if len(rows) <= FOLD:
        return rows
    more = f"| … and {len(rows) - FOLD} more {noun} (the job's JSON lists every one) |" + " |" * (columns - 1)
    return [*rows[:FOLD], more]
