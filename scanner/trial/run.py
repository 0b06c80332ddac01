"""``fathom try``: get a tool list, ask a real model which tool it would call, and check what it answered.

    plan = prepare(request)        # the tools, the prompts, the model and its endpoint; nothing sent yet
    plan.needs_consent             # a remote endpoint: the caller must ask first (plan.consent_text says what)
    report = run(plan)             # one turn per prompt and repetition; nothing is ever called

A trial sends the prompt as the user's message and the tool list exactly as ``fathom check --as PROVIDER``
prints it, with tool choice "auto". Each call the model asks for is checked: is the tool in the list, do the
arguments fit its ``inputSchema``, and (for a case) is it the tool the case expects, with the expected values.
An answer that is text only, a refusal, a filtered or truncated answer is an outcome, said plainly; a provider
that refuses or fails the request ends the run with :class:`scanner.providers.api.ModelApiError` (exit 5), after
the transcript of what was done is saved.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scanner.errors import FathomError, InputError
from scanner.models import Toolset
from scanner.providers.api import Call, ModelAnswer, ModelApiError, Stop, ToolCall, redact_url, send
from scanner.providers.base import read_tool
from scanner.textsafe import clean
from scanner.trial.cases import Case
from scanner.trial.price import price
from scanner.trial.render import report_json
from scanner.trial.types import CallCheck, CaseSummary, Plan, Trial, TrialReport, TrialRequest
from scanner.trial.validate import ArgError, SchemaUnusable, check_arguments, check_expected, pattern_budget

MAX_REPEAT = 100
# Calls checked per answer (an answer may hold tens of thousands; each check validates a schema): the budget for
# checking one answer. The rest are counted (``Trial.unchecked``), not checked, and never make a trial pass.
MAX_CHECKED_CALLS = 64


class ToolsUnavailable(FathomError):
    """The server named for the tool list could not be listed (exit 3, as for ``fathom check``)."""

    exit_code = 3


def load_tools(request: TrialRequest) -> tuple[tuple[Any, ...], str]:
    """The tool list from ``check``'s sources or the newest stored list of ``--server``; and its label."""
    if request.db_url is not None:
        from scanner.store import open_store

        if not request.server:
            raise InputError("--db needs --server NAME (the server whose newest stored tool list is tried)")
        with open_store(request.db_url) as store:
            rows = [row for row in store.history(request.server) if row.toolset_sha256]
            if not rows:
                raise InputError(f"{request.server!r} has no stored tool list (no scan of it listed tools)")
            newest = rows[-1]
            assert newest.toolset_sha256 is not None
            tools = store.toolset_tools(newest.toolset_sha256)
        return tuple(tools), f"{request.server} (run {newest.run_id}, stored)"
    if request.check is None:
        raise InputError("give a tool list: --tools-file, --url, --stdio, '-- command ...', or --db with --server")
    from scanner.check import run_check

    result = run_check(replace(request.check, measure=False))
    if result.tools is None:
        outcome = result.outcome
        detail = f"{outcome.outcome.value}: {outcome.detail}" if outcome is not None else "no tools"
        raise ToolsUnavailable(f"{result.source}: {detail}")
    return tuple(result.tools), redact_url(result.source)  # a server URL may carry user:password


def prepare(request: TrialRequest) -> Plan:
    """Resolve everything a run needs and check it, sending nothing (the caller asks for consent next)."""
    from scanner import providers

    if not 1 <= request.repeat <= MAX_REPEAT:
        raise InputError(f"--repeat wants 1 to {MAX_REPEAT}, got {request.repeat}")
    if request.max_tokens < 1:
        raise InputError(f"--max-tokens wants a positive number, got {request.max_tokens}")
    if not request.cases:
        raise InputError("no prompt: give --prompt TEXT, pipe one on standard input, or --cases FILE")
    tools, source = load_tools(request)
    from scanner.trial.finite import first_non_finite

    not_json = "which JSON cannot carry; nothing was sent"
    where = first_non_finite(list(tools))
    if where is not None:
        raise InputError(f"{source}: the tool list holds NaN or Infinity at {where or '/'}, {not_json}")
    for case in request.cases:
        for label, value in (("arguments", case.arguments), ("arguments_schema", case.arguments_schema)):
            where = first_non_finite(value)
            if where is not None:
                raise InputError(f"{case.name}: {label} hold NaN or Infinity at {where or '/'}, {not_json}")
    provider = request.target.api.provider
    view = providers.provider_view(provider, list(tools))
    plan = Plan(
        request=request,
        tools=tools,
        view=view,
        source=source,
        toolset_sha256=Toolset.from_tools(list(tools)).sha256,
        estimate=providers.list_tokens(provider, list(tools)),
    )
    names = set(plan.view_names)
    for case in request.cases:
        if case.expects_tool and case.tool is not None and case.tool not in names:
            raise InputError(f"{case.name}: expects tool {clean(case.tool)!r}, which is not in the list from {source}")
    return plan


def _schemas(plan: Plan) -> dict[str, Any]:
    """Each sent tool's raw ``inputSchema`` by the name the model sees (the first of duplicate names wins)."""
    schemas: dict[str, Any] = {}
    for tool in plan.tools:
        parts = read_tool(tool)
        if parts is not None and parts.name not in schemas:
            schemas[parts.name] = parts.schema
    return schemas


def check_call(call: ToolCall, schemas: dict[str, Any], case: Case | None = None) -> CallCheck:
    """One call checked against the list, the tool's schema, and the case's expectations for that tool."""
    known = call.name in schemas
    if not known or call.arguments_error is not None:
        return CallCheck(call.name, call.arguments, known, arguments_error=call.arguments_error)
    try:
        errors = check_arguments(schemas[call.name], call.arguments)
        problem = None
    except SchemaUnusable as exc:
        errors, problem = (), str(exc)
    expected: tuple[ArgError, ...] = ()
    if case is not None and case.tool == call.name:
        if case.arguments is not None:
            expected += check_expected(case.arguments, call.arguments)
        if case.arguments_schema is not None:
            try:
                expected += check_arguments(case.arguments_schema, call.arguments)
            except SchemaUnusable as exc:
                expected += (ArgError("", "arguments_schema usable", str(exc)),)
    return CallCheck(call.name, call.arguments, known, errors, None, problem, expected)


def judge(case: Case, answer: ModelAnswer, calls: tuple[CallCheck, ...]) -> tuple[bool | None, bool, bool | None, bool]:
    """(chose_right, valid, matched, passed) for one answer to one case.

    A plain prompt passes when the answer is complete and its first call is to a listed tool with valid
    arguments. A case passes when the expected tool is called with valid arguments that meet its expectations
    (or, for ``tool: null``, when no tool is called). A truncated, refused or filtered answer never passes.
    """
    complete = answer.stop not in (Stop.MAX_TOKENS, Stop.REFUSAL, Stop.FILTERED, Stop.MALFORMED_CALL)
    if not case.expects_tool:
        valid = bool(calls) and calls[0].valid
        return None, valid, None, complete and valid
    if case.tool is None:
        right = not calls
        return right, True, None, complete and right
    mine = [call for call in calls if call.name == case.tool]
    right = bool(mine)
    has_expectations = case.arguments is not None or case.arguments_schema is not None
    best = next((call for call in mine if call.valid and not call.expectation_errors), None)
    best = best or next((call for call in mine if call.valid), None) or (mine[0] if mine else None)
    valid = best is not None and best.valid
    matched = (best is not None and not best.expectation_errors) if has_expectations else None
    return right, valid, matched, complete and right and valid and matched is not False


def _summaries(plan: Plan, trials: Sequence[Trial]) -> tuple[CaseSummary, ...]:
    out = []
    for index, case in enumerate(plan.request.cases):
        mine = [trial for trial in trials if trial.case == index]
        if not mine:
            continue
        has_expectations = case.arguments is not None or case.arguments_schema is not None
        out.append(
            CaseSummary(
                case=case,
                trials=len(mine),
                right=sum(bool(trial.chose_right) for trial in mine),
                valid=sum(trial.valid for trial in mine),
                matched=sum(bool(trial.matched) for trial in mine) if has_expectations else None,
                passed=sum(trial.passed for trial in mine),
                choices=dict(Counter(trial.choice for trial in mine).most_common()),
            )
        )
    return tuple(out)


def run(plan: Plan) -> TrialReport:
    """One turn per case and repetition, in order; every answer checked, priced and kept.

    A provider failure stops the run: the transcript of the finished trials (and the error) is saved first when
    ``--save`` was given, then the :class:`ModelApiError` propagates.
    """
    request = plan.request
    target = request.target
    schemas = _schemas(plan)
    started = datetime.now(UTC)
    trials: list[Trial] = []
    headers = target.api.headers()
    auth = target.api.auth_headers(target.key) if target.key else {}

    try:
        for index, case in enumerate(request.cases):
            body = target.api.body(
                target.model, case.prompt, plan.view, request.max_tokens, custom_base=target.custom_base
            )
            call = Call(url=target.endpoint, headers=headers, auth_headers=auth, body=body, key_env=target.key_env)
            for repetition in range(request.repeat):
                exchange, answer = send(target.api, call, request.limits)
                kept = answer.calls[:MAX_CHECKED_CALLS]
                with pattern_budget():  # every pattern of the answer's calls together (validate.PATTERN_TOTAL_SECONDS)
                    checked = tuple(check_call(tool_call, schemas, case) for tool_call in kept)
                right, valid, matched, passed = judge(case, answer, checked)
                unchecked = len(answer.calls) - len(kept)
                passed = passed and not unchecked
                trials.append(
                    Trial(
                        case=index,
                        repetition=repetition,
                        answer=answer,
                        calls=checked,
                        price=price(target, answer.usage),
                        exchange=exchange,
                        chose_right=right,
                        valid=valid,
                        matched=matched,
                        passed=passed,
                        unchecked=unchecked,
                    )
                )
    except ModelApiError as exc:
        if request.save is not None:
            partial = TrialReport(plan, tuple(trials), started, _summaries(plan, trials))
            save_transcript(partial, request.save, error=str(exc))
        raise
    report = TrialReport(plan, tuple(trials), started, _summaries(plan, trials))
    if request.save is not None:
        save_transcript(report, request.save)
    return report


def save_transcript(report: TrialReport, path: Path, error: str | None = None) -> None:
    """The report, and every request (without its key headers) with the provider's answer, as one JSON file."""
    document = report_json(report)
    document["kind"] = "fathom-try-transcript"
    document["error"] = error
    document["exchanges"] = [
        {
            "case": trial.case,
            "repetition": trial.repetition,
            "request": {
                "method": "POST",
                "url": trial.exchange.url,
                "headers": dict(trial.exchange.request_headers),
                "body": trial.exchange.request_body,
            },
            "response": {"status": trial.exchange.status, "body": trial.exchange.response_body},
            "attempts": trial.exchange.attempts,
            "seconds": trial.exchange.seconds,
        }
        for trial in report.trials
    ]
    try:
        from scanner.trial.finite import finite

        text = json.dumps(finite(document), indent=2, ensure_ascii=False, allow_nan=False)
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--save {path}: cannot write ({exc.strerror})") from None
