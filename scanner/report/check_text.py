"""``fathom check`` in a terminal: laid out like the product card.

Tokens per provider, the tool count and the 200k share, the biggest tools, then findings worst first under
``1 problem, 2 warnings, 3 notes`` (or ``Nothing a model would stumble over``). Colour only when asked (on a TTY);
every string from the list goes through :func:`scanner.textsafe.clean`.
"""

from __future__ import annotations

from scanner.check import CheckResult
from scanner.models import PROVIDER_LABELS, CheckReport, ScanOutcome, Severity
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
        parts.append(f"protocol {clean(outcome.protocol_version)} ({outcome.era or 'unknown era'})")
    if outcome.capability_profile:
        parts.append(f"client profile {outcome.capability_profile}")
    total = outcome.timings_ms.get("total")
    if total is not None:
        # A server that ignores a closed stdin costs the shutdown grace; that is not its answer time.
        stopping = outcome.timings_ms.get("shutdown", 0.0)
        parts.append(f"{total - stopping:.0f} ms" + (f" (+{stopping:.0f} ms to stop)" if stopping >= 100 else ""))
    return [paint(f"Server: {name}{version}", "1"), "  " + " · ".join(parts)]


def report_lines(report: CheckReport, paint: _Painter) -> list[str]:
    lines = [paint("Tokens per turn", "1")]
    for provider, count in report.tokens.items():
        label = PROVIDER_LABELS.get(provider, provider)
        lines.append(f"  {label:<14}{count.tokens:>9,}   {paint(count.method, '2')}")
    dearest = max(report.tokens.values(), key=lambda count: count.tokens)
    tools = f"{report.tools_count} tool{'' if report.tools_count == 1 else 's'}"
    share = f"{report.context_share * 100:.1f} % of a 200k context"
    lines.append(f"  {tools} · {share} ({PROVIDER_LABELS.get(dearest.provider, dearest.provider)})")
    if report.largest_tools:
        lines += ["", paint("Largest tools", "1")]
        width = min(40, max(len(clean(cost.name)) for cost in report.largest_tools))
        header = "".join(f"{PROVIDER_LABELS.get(p, p).split()[-1]:>11}" for p in report.tokens)
        lines.append(f"  {'':<{width}}{header}")
        for cost in report.largest_tools:
            name = clean(cost.name)
            name = name if len(name) <= width else name[: width - 1] + "…"
            counts = "".join(f"{cost.tokens.get(p, 0):>11,}" for p in report.tokens)
            lines.append(f"  {name:<{width}}{counts}")
    lines += ["", paint(report.summary.headline(), "1")]
    for finding in report.findings:
        where = f" · {clean(finding.tool)}" if finding.tool is not None else ""
        label = paint(f"{finding.severity.label:<8}", _SEVERITY_STYLE[finding.severity])
        lines.append(f"  {label} {finding.code} {finding.rule}{where}")
        lines.append(f"           {clean(finding.message)}")
        lines.append(f"           {paint('fix: ' + clean(finding.hint), '2')}")
    return lines


def render(result: CheckResult, *, colour: bool = False) -> str:
    paint = _Painter(colour)
    lines = [paint(f"Tool list: {clean(result.source)}", "1")] if result.outcome is None else []
    if result.outcome is not None:
        lines += server_lines(result.outcome, paint)
    if result.report is None:
        assert result.outcome is not None
        lines.append(
            paint(f"  {result.outcome.outcome.value}: {clean(result.outcome.detail)}", "31;1"),
        )
        return "\n".join(lines) + "\n"
    lines.append("")
    lines += report_lines(result.report, paint)
    return "\n".join(lines) + "\n"
