"""``fathom check --format json``: the machine contract other tools parse.

``format_version`` comes first (:data:`FORMAT_VERSION`). Keys kept stable: ``tools_count``, ``tokens`` ({provider:
{tokens, method}}; ``anthropic`` is Claude's current tokenizer, ``anthropic-v3`` the earlier one),
``context_share``, ``largest_tools`` ([{name, tokens}], the five dearest), ``tools`` (every tool, [{name, index,
tokens}] sorted by cost, dearest first), ``summary`` ({problems, warnings, notes, preview}: the scored findings
counted, the preview ones apart), ``findings`` ([{code, rule, severity, tool, message, hint, pointer, details,
status}], every finding shown, never grouped; ``status`` is ``stable`` or ``preview``: a preview finding, shown only
with ``--preview``, also carries its rule's measured ``precision``, 0-1 or null). When the server sent
``instructions``: ``instructions`` ({sha256, chars, tokens: {provider: {tokens, method}}}) and
``tokens_with_instructions`` ({provider: tools + instructions}); the text itself is in
``outcome.extra.instructions``. A server check adds ``server`` and ``outcome`` ({status, detail, extra}); a server
that could not be listed has ``outcome`` and no measurement keys. Output is ASCII-escaped JSON, so nothing a server
wrote reaches a terminal raw.

Also: ``score`` ({score, version, mean_tool, worst_tool, list_penalty, cost_penalty, tokens, rules: [{code, rule,
findings, points}]}, null for a list with no tools: the leaderboard's number and what each rule cost),
``ignored`` (the findings ``--select``/``--ignore`` or a per-tool ignore kept out, each with its ``reason``;
the score still counts them), ``gates`` ([{gate, passed,
message}]), ``clients`` ({client: {label, provider, deferred, tokens, loaded_3, loaded_5, search_tool, method}}:
what each client sends per turn, scanner.measure.clients), ``verdicts`` ({client: {label, state, verdict, dropped,
reasons,
rules, preview?}}: whether each client loads the list, drops tools or refuses it, scanner.measure.verdicts) and, with
``--baseline``, ``baseline`` (tokens, tools with the fields that changed, and findings new, fixed and gone with
their tool, compared with it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scanner.check.result import CheckResult, Comparison
from scanner.measure.clients import CLIENTS_VERSION, report_clients
from scanner.measure.verdicts import result_verdicts
from scanner.measure.verdicts import to_json as verdict_json
from scanner.models import CheckReport, Finding, ScanOutcome, Summary
from scanner.rules.catalogue import rule_precision
from scanner.rules.registry import is_preview, status_of


def finding_dict(finding: Finding) -> dict[str, Any]:
    """A finding as JSON with its rule's ``status`` (``stable``, or ``preview``: shown only with ``--preview``,
    never scored or gated) and, for a preview rule, its measured ``precision`` on real lists (null when not
    measured)."""
    status = status_of(finding.code)
    data = finding.to_json() | {"status": status}
    if status == "preview":
        data["precision"] = rule_precision(finding.code)
    return data


def report_dict(report: CheckReport, tools: Sequence[Any] | None = None) -> dict[str, Any]:
    scored = tuple(finding for finding in report.findings if not is_preview(finding.code))
    summary = Summary.of(scored)
    return {
        "tools_count": report.tools_count,
        "toolset_sha256": report.toolset_sha256,
        "tokens": {
            provider: {"tokens": count.tokens, "method": count.method} for provider, count in report.tokens.items()
        },
        "context_share": round(report.context_share, 6),
        "largest_tools": [{"name": cost.name, "tokens": dict(cost.tokens)} for cost in report.largest_tools],
        "tools": [
            {"name": cost.name, "index": cost.index, "tokens": dict(cost.tokens)} for cost in report.tools_by_cost
        ],
        "summary": {
            "problems": summary.problems,
            "warnings": summary.warnings,
            "notes": summary.notes,
            "preview": len(report.findings) - len(scored),
        },
        "findings": [finding_dict(finding) for finding in report.findings],
        "clients": {cost.client: cost.to_json() for cost in report_clients(report, tools)},
        "clients_version": CLIENTS_VERSION,
    } | instructions_dict(report)


def instructions_dict(report: CheckReport) -> dict[str, Any]:
    """The instructions' keys, or nothing when the server sent none."""
    cost = report.instructions
    if cost is None:
        return {}
    return {
        "instructions": {
            "sha256": cost.sha256,
            "chars": len(cost.text),
            "tokens": {p: {"tokens": c.tokens, "method": c.method} for p, c in cost.tokens.items()},
        },
        "tokens_with_instructions": {
            p: count.tokens + cost.tokens[p].tokens for p, count in report.tokens.items() if p in cost.tokens
        },
    }


def server_dict(outcome: ScanOutcome) -> dict[str, Any]:
    return {
        "name": outcome.server_name,
        "version": outcome.server_version,
        "protocol_version": outcome.protocol_version,
        "era": outcome.era,
        "transport": outcome.transport,
        "capability_profile": outcome.capability_profile,
        "timings_ms": {key: round(value, 1) for key, value in outcome.timings_ms.items()},
        "pages": outcome.pages,
    }


def outcome_dict(outcome: ScanOutcome) -> dict[str, Any]:
    """How the connection ended; outcome-specific data (HTTP status, auth challenge, exit code...) under ``extra``."""
    return {"status": outcome.outcome.value, "detail": outcome.detail, "extra": dict(outcome.extra)}


FORMAT_VERSION = 2
"""The version of this document's shape (``format_version``, its first key): bumped when a key is removed or
changes meaning; keys are only ever added within one version. 2: ``format_version`` itself, ``baseline.tools[].fields``
and ``baseline.gone_findings``."""


def result_dict(result: CheckResult) -> dict[str, Any]:
    data: dict[str, Any] = {"format_version": FORMAT_VERSION, "source": result.source}
    if result.outcome is not None:
        data["server"] = server_dict(result.outcome)
        data["outcome"] = outcome_dict(result.outcome)
    if result.outcome_findings:
        data["findings"] = [finding_dict(finding) for finding in result.outcome_findings]
    if result.report is not None:
        data.update(report_dict(result.report, result.tools))
        data.update(gate_dict(result))
    from scanner.providers import strict

    view = strict.result_view(result)
    if view is not None:  # check --openai-strict only
        data["openai_strict"] = strict.to_json(view)
    return data


def score_dict(result: CheckResult) -> dict[str, Any] | None:
    score = result.score
    if score is None:
        return None
    return {
        "score": score.score,
        "version": score.version,
        "mean_tool": score.mean_tool,
        "worst_tool": score.worst_tool,
        "list_penalty": score.list_penalty,
        "cost_penalty": score.cost_penalty,
        "refused": list(score.refused),
        "tokens": score.tokens,
        "rules": [
            {"code": cost.code, "rule": cost.rule, "findings": cost.findings, "points": cost.points}
            for cost in result.rule_costs
        ],
    }


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "file": comparison.baseline,
        "source": comparison.source,
        "score": {"before": comparison.score_before, "after": comparison.score_after},
        "tools_count": {"before": comparison.tools_before, "after": comparison.tools_after},
        "tokens": {
            delta.provider: {
                "before": delta.before,
                "after": delta.after,
                "delta": delta.delta,
                "percent": None if delta.percent is None else round(delta.percent, 2),
            }
            for delta in comparison.tokens
        },
        "tools": [
            {
                "name": tool.name,
                "change": tool.change,
                "fields": list(tool.fields),
                "before": dict(tool.before),
                "after": dict(tool.after),
            }
            for tool in comparison.tools
        ],
        "new_findings": [finding_dict(finding) for finding in comparison.new],
        "fixed_findings": [finding.to_json() for finding in comparison.fixed],
        "gone_findings": [finding.to_json() for finding in comparison.gone],
    }


def gate_dict(result: CheckResult) -> dict[str, Any]:
    """The keys a measured check adds beyond the report: score, ignored findings, gates, baseline."""
    data: dict[str, Any] = {
        "score": score_dict(result),
        "ignored": [finding_dict(item.finding) | {"reason": item.reason} for item in result.ignored],
        "gates": [{"gate": gate.gate, "passed": gate.passed, "message": gate.message} for gate in result.gates],
        "verdicts": verdict_json(result_verdicts(result)),
    }
    if result.comparison is not None:
        data["baseline"] = comparison_dict(result.comparison)
    return data


def render(result: CheckResult) -> str:
    return json.dumps(result_dict(result), indent=2, ensure_ascii=True, default=str) + "\n"
