"""``fathom try`` output: text for a terminal, JSON for programs (and the transcript), Markdown for a CI summary.

All three say the same things: each answer's calls with their argument problems (a JSON Pointer, what was
expected, what came), the outcome in words, the tokens the provider reported beside Fathom's own estimate for the
tool list, the price (or "price unknown", with why), and for cases a table with the score. Text from the server
and the model is escaped (control and format characters) before it reaches a terminal or a Markdown page.
"""

from __future__ import annotations

import json
from typing import Any

from scanner.report.tabular import TableFormat, render_rows
from scanner.report.text import markdown_escape
from scanner.textsafe import clean
from scanner.trial.types import CaseSummary, Trial, TrialReport
from scanner.trial.validate import ArgError

SHOWN_ARGUMENTS = 300


def _usd(value: Any) -> str:
    if value is None:
        return "price unknown"
    return f"${value:.6f}".rstrip("0").rstrip(".") if value < 1 else f"${value:,.4f}"


def _args(arguments: Any) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN_ARGUMENTS else text[: SHOWN_ARGUMENTS - 1] + "…"


def _error(error: ArgError) -> str:
    return f"{error.pointer or '(arguments)'}: expected {error.expected}, got {error.got}"


def _tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _expected(summary: CaseSummary) -> str:
    case = summary.case
    if not case.expects_tool:
        return "(any listed tool)"
    return case.tool if case.tool is not None else "(no call)"


def _ratio(part: int | None, whole: int) -> str:
    return "" if part is None else f"{part}/{whole}"


def report_json(report: TrialReport) -> dict[str, Any]:
    """The whole report as plain JSON values (also the body of a ``--save`` transcript)."""
    plan = report.plan
    target = plan.target
    return {
        "kind": "fathom-try",
        "model": target.spec,
        "provider": "openai-compatible" if target.compatible else target.api.provider,
        "endpoint": target.shown_endpoint,
        "started_at": report.started_at.isoformat(timespec="seconds"),
        "source": plan.source,
        "tools": len(plan.view_names),
        "toolset_sha256": plan.toolset_sha256,
        "tool_list_estimate": {"tokens": plan.estimate.tokens, "method": plan.estimate.method},
        "repeat": plan.request.repeat,
        "max_tokens": plan.request.max_tokens,
        "trials": [_trial_json(report, trial) for trial in report.trials],
        "cases": [
            {
                "name": summary.case.name,
                "prompt": summary.case.prompt,
                "expected_tool": summary.case.tool if summary.case.expects_tool else None,
                "expects_tool": summary.case.expects_tool,
                "trials": summary.trials,
                "right": summary.right if summary.case.expects_tool else None,
                "valid": summary.valid,
                "matched": summary.matched,
                "passed": summary.passed,
                "missed": summary.missed,
                "choices": summary.choices,
            }
            for summary in report.summaries
        ],
        "score": round(report.score, 4),
        "missed_cases": report.missed,
        "usage": {
            "input_tokens": report.input_tokens,
            "output_tokens": report.output_tokens,
            "method": f"as reported by {target.label}",
        },
        "price_usd": None if report.total_usd is None else str(report.total_usd),
    }


def _trial_json(report: TrialReport, trial: Trial) -> dict[str, Any]:
    answer = trial.answer
    return {
        "case": report.plan.request.cases[trial.case].name,
        "repetition": trial.repetition + 1,
        "outcome": trial.outcome,
        "stop": answer.stop.value,
        "stop_reason": answer.stop_reason,
        "model": answer.model,
        "text": answer.text,
        "refusal": answer.refusal,
        "calls": [
            {
                "tool": call.name,
                "arguments": call.arguments,
                "in_list": call.known,
                "valid": call.valid,
                "arguments_error": call.arguments_error,
                "schema_problem": call.schema_problem,
                "errors": [vars(error) for error in call.errors],
                "expectation_errors": [vars(error) for error in call.expectation_errors],
            }
            for call in trial.calls
        ],
        "unchecked_calls": trial.unchecked,
        "chose_right": trial.chose_right,
        "valid": trial.valid,
        "matched": trial.matched,
        "passed": trial.passed,
        "usage": {
            "input_tokens": answer.usage.input_tokens,
            "output_tokens": answer.usage.output_tokens,
            **dict(answer.usage.details),
        },
        "price_usd": None if trial.price.usd is None else str(trial.price.usd),
        "price_method": trial.price.method,
        "attempts": trial.exchange.attempts,
        "seconds": trial.exchange.seconds,
    }


def render_json(report: TrialReport) -> str:
    # Strict JSON: the answers were read with every non-finite number made null (scanner.providers.api), and any
    # that reached the report another way is written null too, never a bare NaN.
    from scanner.trial.finite import finite

    return json.dumps(finite(report_json(report)), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _trial_lines(trial: Trial, esc: Any, bullet: str = "  ") -> list[str]:
    lines = [f"{bullet}{esc(trial.outcome)}"]
    for call in trial.calls:
        mark = "ok" if call.valid else "x"
        shown = _args(call.arguments) if call.arguments_error is None else "(unreadable arguments)"
        lines.append(f"{bullet}  [{mark}] {esc(call.name)} {esc(shown)}")
        problems: list[str] = []
        if not call.known:
            problems = ["not in the tool list"]
        elif call.arguments_error:
            problems = [call.arguments_error]
        elif call.schema_problem:
            problems = [f"not checked: {call.schema_problem}"]
        problems += [_error(error) for error in call.errors]
        problems += [f"case expects {_error(error)}" for error in call.expectation_errors]
        lines += [f"{bullet}      {esc(problem)}" for problem in problems if problem]
    answer = trial.answer
    if answer.refusal:
        lines.append(f"{bullet}  refusal: {esc(answer.refusal)}")
    if answer.text.strip():
        text = " ".join(answer.text.split())
        lines.append(f"{bullet}  text: {esc(text if len(text) <= 400 else text[:399] + '…')}")
    usage = answer.usage
    lines.append(
        f"{bullet}  tokens: {_tokens(usage.input_tokens)} in, {_tokens(usage.output_tokens)} out; "
        f"{_usd(trial.price.usd)}"
    )
    return lines


def _head(report: TrialReport, esc: Any) -> list[str]:
    plan = report.plan
    target = plan.target
    return [
        f"model: {esc(target.spec)} at {esc(target.shown_endpoint)}",
        f"tools: {len(plan.view_names)} from {esc(plan.source)} (sha256 {plan.toolset_sha256[:12]})",
        f"Fathom's estimate for the tool list: {plan.estimate.tokens:,} tokens a turn [{esc(plan.estimate.method)}]",
    ]


def _foot(report: TrialReport, esc: Any) -> list[str]:
    methods = sorted({trial.price.method for trial in report.trials})
    lines = [
        f"tokens ({report.plan.target.label} reported): {_tokens(report.input_tokens)} in, "
        f"{_tokens(report.output_tokens)} out over {len(report.trials)} request(s); the tool list is about "
        f"{report.plan.estimate.tokens:,} of each request's input by Fathom's estimate",
        f"price: {_usd(report.total_usd)} ({esc('; '.join(methods))})",
    ]
    if any(summary.case.expects_tool for summary in report.summaries):
        lines.append(
            f"score: {report.score:.0%} of {len(report.trials)} trial(s) passed; "
            f"{report.missed} of {len(report.summaries)} case(s) missed"
        )
    return lines


def _rows(report: TrialReport) -> list[dict[str, Any]]:
    return [
        {
            "case": summary.case.name,
            "expected": _expected(summary),
            "chosen": ", ".join(f"{name} {count}" for name, count in summary.choices.items()),
            "right": _ratio(summary.right, summary.trials) if summary.case.expects_tool else "",
            "valid": _ratio(summary.valid, summary.trials),
            "values": _ratio(summary.matched, summary.trials),
            "passed": _ratio(summary.passed, summary.trials),
        }
        for summary in report.summaries
    ]


def render_text(report: TrialReport) -> str:
    esc = clean
    lines = [*_head(report, esc), ""]
    for index, case in enumerate(report.plan.request.cases):
        trials = [trial for trial in report.trials if trial.case == index]
        title = f"{case.name}: " if case.expects_tool else ""
        lines.append(f"{esc(title)}prompt: {esc(' '.join(case.prompt.split()))}")
        for trial in trials:
            if len(trials) > 1:
                lines.append(f"  #{trial.repetition + 1}")
            lines += _trial_lines(trial, esc, "    " if len(trials) > 1 else "  ")
        lines.append("")
    if len(report.summaries) > 1 or report.plan.request.repeat > 1:
        lines.append(render_rows(_rows(report), TableFormat.table).rstrip("\n"))
        lines.append("")
    lines += _foot(report, esc)
    return "\n".join(lines) + "\n"


def render_markdown(report: TrialReport) -> str:
    def esc(text: object) -> str:
        return markdown_escape(text, limit=None)

    lines = ["## Which tool would the model call?", ""]
    lines += [f"- {line}" for line in _head(report, esc)] + [""]
    rows = _rows(report)
    columns = ["case", "expected", "chosen", "right", "valid", "values", "passed"]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for row in rows:
        lines.append("| " + " | ".join(esc(row[column]) for column in columns) + " |")
    lines.append("")
    for index, case in enumerate(report.plan.request.cases):
        trials = [trial for trial in report.trials if trial.case == index]
        lines.append(f"### {esc(case.name)}")
        lines.append("")
        lines.append(f"> {esc(' '.join(case.prompt.split()))}")
        lines.append("")
        for trial in trials:
            body = _trial_lines(trial, esc, "")
            lines.append(f"- #{trial.repetition + 1}: {body[0]}")
            lines += [f"  - {line.strip()}" for line in body[1:]]
        lines.append("")
    lines += [f"- {line}" for line in _foot(report, esc)]
    return "\n".join(lines) + "\n"
