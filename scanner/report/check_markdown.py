"""``fathom check --format markdown``: the same report as a Markdown section, for a PR comment or a CI summary.

Server text is escaped for Markdown (table pipes, emphasis, HTML) and stripped of control characters; the
catalogue's own hints keep their code spans. A rule firing on more than five tools is one row with its count
(``--verbose`` lists each); ``--tools`` lists every tool's cost instead of the five largest.
"""

from __future__ import annotations

from scanner.check import CheckResult
from scanner.models import PROVIDER_LABELS
from scanner.report.check_groups import FindingGroup, group_findings
from scanner.report.text import markdown_escape


def md(text: object) -> str:
    """Text safe inside Markdown prose or a table cell (the report's own escaping, never cut)."""
    return markdown_escape(text, limit=None)


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
    out += ["| Provider | Tokens per turn | Method |", "|---|---:|---|"]
    for provider, count in report.tokens.items():
        out.append(f"| {PROVIDER_LABELS.get(provider, provider)} | {count.tokens:,} | {md(count.method)} |")
    out += ["", f"{report.tools_count} tools · {report.context_share * 100:.1f} % of a 200k context", ""]
    if report.instructions is not None:
        out += ["**Instructions** (the server's, read as a system text every turn):", ""]
        out += ["| Provider | Tools | + Instructions | Method |", "|---|---:|---:|---|"]
        for provider, count in report.instructions.tokens.items():
            tools = report.tokens[provider].tokens if provider in report.tokens else 0
            label = PROVIDER_LABELS.get(provider, provider)
            out.append(f"| {label} | {tools:,} | {count.tokens:,} | {md(count.method)} |")
        out.append("")
    shown = report.tools_by_cost if all_tools else report.largest_tools
    if shown:
        providers = list(report.tokens)
        out += ["### Tools, most expensive first" if all_tools else "### Largest tools", ""]
        out.append("| Tool | " + " | ".join(PROVIDER_LABELS.get(p, p) for p in providers) + " |")
        out.append("|---|" + "---:|" * len(providers))
        for cost in shown:
            counts = " | ".join(f"{cost.tokens.get(p, 0):,}" for p in providers)
            out.append(f"| {md(cost.name)} | {counts} |")
        out.append("")
    out += [f"### {report.summary.headline()}", ""]
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
            out.append(
                f"| {finding.severity.label} | {finding.code} {finding.rule} | {tool} | "
                f"{md(finding.message)} | {finding.hint} |"
            )
        out.append("")
    return "\n".join(out)
