"""Measure one tool list: provider token costs, per-tool costs and findings.

:func:`measure` is pure given a tool list (and the offline tokenizer); the crawler and the store call it for every
new toolset, ``fathom check`` (:mod:`scanner.check.run`) for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scanner.models import CONTEXT_WINDOW, CheckReport, ToolCost, Toolset


def tool_label(tool: Any, index: int) -> str:
    """A name to show for a tool, even one whose name is missing or not a string."""
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else f"#{index}"


def measure(
    toolset: Toolset,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    instructions: str | None = None,
    server_key: str = "",
) -> CheckReport:
    """Token costs per provider, every tool's own cost, and the findings of the rule catalogue.

    With ``instructions`` (the server's text) the report also carries their cost per provider as a system text,
    and MCP401/MCP402 over them join the findings (``tool`` None, ``pointer`` ``"instructions"``). ``server_key``
    is the name a client gives the server in its configuration, from which it builds each tool's name (MCP809);
    empty when none is known.

    Raises :class:`~scanner.errors.TokenizerUnavailable` if the offline tokenizer cannot be loaded: a number
    without its tokenizer is never reported.
    """
    from scanner import providers
    from scanner.measure import tokenizer
    from scanner.providers.base import read_tool
    from scanner.rules import RuleContext, run_rules

    tools = list(toolset.tools)
    parts = [read_tool(tool) for tool in tools]  # copied and bounded once, shared by every provider
    measured = providers.measure_all(parts)
    tokens = {provider: measurement.total for provider, measurement in measured.items()}
    tool_costs = tuple(
        ToolCost(
            name=tool_label(tool, index),
            index=index,
            tokens={provider: measurement.per_tool[index] for provider, measurement in measured.items()},
        )
        for index, tool in enumerate(tools)
    )
    most = max(count.tokens for count in tokens.values())
    context = RuleContext(
        count_tokens=tokenizer.count,
        list_tokens_max=most,
        cost_text=providers.text_cost,
        cost_method=providers.text_cost_method(),
        tool_tokens_max=tuple(max(cost.tokens.values(), default=0) for cost in tool_costs),
        tool_tokens_method="per tool, the most expensive provider's view",
        server_key=server_key,
    )
    findings = run_rules(tools, context, select=select, ignore=ignore)
    cost = None
    if instructions:
        from scanner.measure.instructions import instruction_findings, measure_instructions

        cost = measure_instructions(instructions)
        extra = instruction_findings(instructions, select=select, ignore=ignore)
        if extra:
            findings = sorted([*findings, *extra], key=lambda finding: finding.sort_key())
    return CheckReport(
        tools_count=len(tools),
        tokens=tokens,
        context_share=most / CONTEXT_WINDOW,
        tool_costs=tool_costs,
        findings=tuple(findings),
        toolset_sha256=toolset.sha256,
        instructions=cost,
    )


def registry_server_key(entry_name: str, server_name: str | None) -> str:
    """The name a client most likely gives a registry server in its configuration (MCP809): the entry's last name
    segment (``io.github.acme/weather`` -> ``weather``), else the server's ``serverInfo.name``, else empty."""
    last = entry_name.rsplit("/", 1)[-1].strip()
    return last or (server_name or "").strip()


def server_key_findings(tools: Sequence[Any], server_key: str) -> list[Any]:
    """MCP809's findings for one server's list under its key: a registry scan stores them with the scan, since a
    toolset is measured once for every server that serves it, under whatever key each is given."""
    if not server_key:
        return []
    from scanner.measure import tokenizer
    from scanner.rules import RuleContext, run_rules

    return run_rules(list(tools), RuleContext(count_tokens=tokenizer.count, server_key=server_key), select=["MCP809"])
