"""The gates of ``fathom check`` in CI, and :func:`run_gate`, the one library call behind the command.

A gate is a limit the author sets: ``--fail-on problem|warning|note`` (findings at or above a severity;
``--strict`` is ``--fail-on problem``), ``--min-score N`` (the leaderboard's score), ``--max-tokens N`` (the
most expensive provider, ``PROVIDER=N`` for one, or ``CLIENT:N`` for what a client sends per turn at rest,
:mod:`scanner.measure.clients`), ``--fail-on-reject CLIENT[,CLIENT]`` (a named client would
refuse the list or drop a tool: :mod:`scanner.measure.verdicts`, stable rules only) and, against a ``--baseline``,
``--max-increase 10%`` (or a number of tokens) on every provider. With a baseline, ``--fail-on`` counts only
findings that are new since it: the gate fails on what got worse, not on what the last release already had. Every
gate asked for is evaluated and reported (passed or failed, and by how much); any failure makes the command exit 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from scanner.check.result import CheckRequest, CheckResult, GateResult
from scanner.check.run import run_check
from scanner.errors import InputError
from scanner.models import PROVIDER_LABELS, PROVIDER_SHORT, Severity

if TYPE_CHECKING:
    from scanner.check.result import TokenDelta


@dataclass(frozen=True)
class TokenLimit:
    """``--max-tokens``: at most ``limit`` tokens per turn with ``provider`` (None: the most expensive one), or
    sent per turn at rest by ``client`` (a key of :data:`scanner.measure.clients.CLIENTS`)."""

    limit: int
    provider: str | None = None
    client: str | None = None

    def text(self) -> str:
        if self.client:
            return f"{self.client}:{self.limit}"
        return f"{self.provider}={self.limit}" if self.provider else str(self.limit)


@dataclass(frozen=True)
class Increase:
    """``--max-increase``: growth allowed over the baseline, in percent (``10%``) or tokens (``500``)."""

    value: float
    percent: bool

    def text(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g}"

    def allowed(self, before: int) -> float:
        return before * self.value / 100.0 if self.percent else self.value


@dataclass(frozen=True)
class Gates:
    fail_on: Severity | None = None
    min_score: float | None = None
    max_tokens: tuple[TokenLimit, ...] = ()
    max_increase: Increase | None = None
    fail_on_new: Severity | None = None
    """``--fail-on-new``: a finding new since the baseline at this severity or worse fails (needs a baseline)."""
    # client keys (scanner.measure.verdicts): fail when one refuses or drops anything
    fail_on_reject: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(
            self.fail_on is not None
            or self.min_score is not None
            or self.max_tokens
            or self.max_increase
            or self.fail_on_new is not None
            or self.fail_on_reject
        )


@dataclass(frozen=True)
class GateRequest:
    """Everything one ``fathom check`` run does beyond measuring: gates, baseline, badge."""

    check: CheckRequest
    gates: Gates = Gates()
    baseline: Path | None = None
    save_baseline: Path | None = None
    badge: Path | None = None


# --- parsing (flags and config share these) -----------------------------------------------------------------


def parse_severity(text: str, where: str = "--fail-on") -> Severity:
    try:
        return Severity.parse(text.strip())
    except KeyError:
        raise InputError(f"{where} {text!r} is not one of problem, warning, note") from None


def parse_max_tokens(value: object, where: str = "--max-tokens") -> TokenLimit:
    """``5000`` (the most expensive provider), ``openai=3000`` (one provider) or ``codex:2000`` (what one client
    sends per turn at rest); ``=`` and ``:`` are the same, the name says whether it is a provider or a client."""
    from scanner.measure.clients import CLIENTS_BY_KEY

    text = str(value).strip()
    provider: str | None = None
    client: str | None = None
    separator = "=" if "=" in text else ":" if ":" in text else ""
    if separator:
        name, _, text = text.partition(separator)
        name = name.strip().lower()
        if name in PROVIDER_SHORT:
            provider = name
        elif name in CLIENTS_BY_KEY:
            client = name
        else:
            raise InputError(
                f"{where} {value!r}: no provider {name!r} (one of {', '.join(PROVIDER_SHORT)}), nor a client of "
                f"that name (one of {', '.join(CLIENTS_BY_KEY)})"
            )
    try:
        limit = int(text.strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise InputError(f"{where} {value!r} is not a whole number of tokens (or PROVIDER=N, CLIENT:N)") from None
    if limit < 0:
        raise InputError(f"{where} {value!r} is negative")
    return TokenLimit(limit=limit, provider=provider, client=client)


def parse_increase(value: object, where: str = "--max-increase") -> Increase:
    """``10%`` of the baseline's tokens, or ``500`` tokens."""
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        number = float(text.rstrip("%").strip())
    except ValueError:
        raise InputError(f"{where} {value!r} is neither a percentage (10%) nor a number of tokens") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{where} {value!r} must be a finite number at or above 0")
    return Increase(value=number, percent=percent)


def parse_score(value: object, where: str = "--min-score") -> float:
    try:
        number = float(str(value))
    except ValueError:
        raise InputError(f"{where} {value!r} is not a number from 0 to 100") from None
    if not math.isfinite(number) or not 0 <= number <= 100:
        raise InputError(f"{where} {value!r} is not a number from 0 to 100")
    return number


# --- evaluation ---------------------------------------------------------------------------------------------


def _label(provider: str) -> str:
    return PROVIDER_LABELS.get(provider, provider)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _fail_on(result: CheckResult, level: Severity, *, flag: str = "--fail-on") -> GateResult:
    from scanner.rules.registry import is_preview

    assert result.report is not None
    against = result.comparison
    findings = against.new if against is not None else result.report.findings
    findings = tuple(finding for finding in findings if not is_preview(finding.code))  # --preview shows, never gates
    hit = [finding for finding in findings if finding.severity <= level]
    counts = [sum(1 for finding in hit if finding.severity is sev) for sev in Severity if sev <= level]
    words = ", ".join(_plural(n, sev.label) for n, sev in zip(counts, Severity, strict=False))
    scope = " new since the baseline" if against is not None else ""
    worse = "" if level is Severity.PROBLEM else f" at {level.label} or worse"
    if hit:
        return GateResult(f"{flag} {level.label}", False, f"{_plural(len(hit), 'finding')}{worse}{scope} ({words})")
    return GateResult(f"{flag} {level.label}", True, f"no finding{worse}{scope}")


def ungated_new(result: CheckResult, gates: Gates) -> str | None:
    """A note when findings new since the baseline went through no gate (the README's baseline example passed
    while a new problem appeared, and nothing said so): what they are, and the flag that gates them."""
    from scanner.rules.registry import is_preview

    against = result.comparison
    new = [finding for finding in against.new if not is_preview(finding.code)] if against is not None else []
    if not new:  # preview findings are never gated, so never "ungated" either
        return None
    levels = [level for level in (gates.fail_on, gates.fail_on_new) if level is not None]
    worst = min(finding.severity for finding in new)
    if levels and worst >= max(levels):  # a gate covers the worst of them (Severity: problem is 0)
        return None
    counts = [sum(1 for finding in new if finding.severity is sev) for sev in Severity]
    words = ", ".join(_plural(n, sev.label) for n, sev in zip(counts, Severity, strict=True) if n)
    return f"{words} new since the baseline went through no gate: --fail-on-new {worst.label} fails on them"


def _min_score(result: CheckResult, minimum: float) -> GateResult:
    score = result.score
    gate = f"--min-score {minimum:g}"
    if score is None:  # a list with no tools has no score: no minimum is met
        return GateResult(gate, False, "no score: the list has no tools")
    if score.score < minimum:
        return GateResult(gate, False, f"score {score.score:.1f} is {minimum - score.score:.1f} below {minimum:g}")
    return GateResult(gate, True, f"score {score.score:.1f}")


def _max_tokens(result: CheckResult, limit: TokenLimit) -> GateResult:
    report = result.report
    assert report is not None
    gate = f"--max-tokens {limit.text()}"
    if limit.client is not None:
        return _max_client_tokens(result, limit, gate)
    if limit.provider is None:
        count = max(report.tokens.values(), key=lambda count: count.tokens)
    elif limit.provider in report.tokens:
        count = report.tokens[limit.provider]
    else:
        return GateResult(gate, False, f"{_label(limit.provider)} was not measured")
    over = count.tokens - limit.limit
    said = f"{count.tokens:,} tokens per turn with {_label(count.provider)}"
    if over > 0:
        share = f", +{100.0 * over / limit.limit:.1f} %" if limit.limit else ""
        return GateResult(gate, False, f"{said}: {over:,} over the limit of {limit.limit:,}{share}")
    return GateResult(gate, True, said)


def _max_client_tokens(result: CheckResult, limit: TokenLimit, gate: str) -> GateResult:
    """What one client sends per turn at rest (deferred or not), against the limit."""
    from scanner.measure.clients import report_clients

    assert result.report is not None
    costs = {cost.client: cost for cost in report_clients(result.report, result.tools)}
    cost = costs.get(str(limit.client))
    if cost is None:
        return GateResult(gate, False, f"{limit.client} was not measured")
    how = "deferred, at rest" if cost.deferred else "every tool"
    said = f"{cost.tokens:,} tokens per turn with {cost.label} ({how})"
    over = cost.tokens - limit.limit
    if over > 0:
        share = f", +{100.0 * over / limit.limit:.1f} %" if limit.limit else ""
        return GateResult(gate, False, f"{said}: {over:,} over the limit of {limit.limit:,}{share}")
    return GateResult(gate, True, said)


def _max_increase(result: CheckResult, increase: Increase) -> GateResult:
    gate = f"--max-increase {increase.text()}"
    against = result.comparison
    if against is None:
        raise InputError("--max-increase compares with a baseline: give --baseline FILE too")

    def said(delta: TokenDelta) -> str:
        percent = f", {delta.percent:+.1f} %" if delta.percent is not None else ""
        return f"{_label(delta.provider)} {delta.before:,} to {delta.after:,} ({delta.delta:+,}{percent})"

    over = [said(delta) for delta in against.tokens if delta.delta > increase.allowed(delta.before)]
    if over:
        return GateResult(gate, False, "tokens grew more than allowed: " + "; ".join(over))

    def used(delta: TokenDelta) -> float:  # the share of the allowance this provider used
        allowed = increase.allowed(delta.before)
        return delta.delta / allowed if allowed > 0 else (0.0 if delta.delta <= 0 else float("inf"))

    nearest = max(against.tokens, key=used, default=None)
    if nearest is None:  # a gate that compares nothing fails: it cannot say the tokens did not grow
        return GateResult(gate, False, "the baseline shares no provider with this check, so nothing was compared")
    limit = f"{increase.text()} allowed" if increase.percent else f"+{increase.value:g} tokens allowed"
    return GateResult(gate, True, f"nearest the limit: {said(nearest)}; {limit}")


def rules_left(select: Sequence[str], ignore: Sequence[str]) -> int:
    """How many rules of the catalogue ``select``/``ignore`` leave shown (0: every rule is ignored)."""
    from scanner.rules import RULES
    from scanner.rules.registry import rule_selected

    return sum(1 for code in RULES if rule_selected(code, select, ignore))


CHECK_SCOPES = ("tool", "list")
"""The rule scopes ``check`` runs on one list; registry-data (MCP7), lanes and history rules never fire there."""


def rules_that_fire(select: Sequence[str], ignore: Sequence[str]) -> int:
    """How many rules ``select``/``ignore`` leave that can fire in ``check`` and be gated: a stable rule with a
    check on a tool or on the list (preview findings are shown with ``--preview``, never gated)."""
    from scanner.rules import RULES
    from scanner.rules.registry import is_preview, rule_selected

    return sum(
        1
        for rule in RULES.values()
        if rule.check is not None
        and rule.scope in CHECK_SCOPES
        and not is_preview(rule.code)
        and rule_selected(rule.code, select, ignore)
    )


def nothing_can_fire(select: Sequence[str], ignore: Sequence[str]) -> str | None:
    """Why ``select``/``ignore`` leave ``--fail-on`` nothing to compare (the gate's failure message), or None
    when some rule can fire."""
    if not rules_left(select, ignore):
        return "every rule is ignored (select/ignore leave none), so no finding was compared: ignore fewer rules"
    if not rules_that_fire(select, ignore):
        return (
            "select/ignore leave only rules that never fire in check (registry-data, lanes, history or preview "
            "rules), so no finding was compared: select rules that check runs"
        )
    return None


def _nothing_shown(level: Severity, why: str) -> GateResult:
    """``--fail-on`` when select/ignore leave no rule that can fire: it could never fail, so it fails
    (docs/ci.md)."""
    return GateResult(f"--fail-on {level.label}", False, why)


def _fail_on_reject(result: CheckResult, clients: tuple[str, ...]) -> GateResult:
    from scanner.measure.verdicts import rejected_by, result_verdicts

    gate = f"--fail-on-reject {','.join(clients)}"
    found = rejected_by(result_verdicts(result), clients)
    if found:
        said = "; ".join(f"{verdict.label} {verdict.phrase()} ({', '.join(verdict.codes)})" for verdict in found)
        return GateResult(gate, False, said)
    return GateResult(gate, True, "every named client loads the whole list")


def evaluate(result: CheckResult, gates: Gates, *, silenced: str | None = None) -> tuple[GateResult, ...]:
    """Every gate asked for, in a fixed order; nothing for a list that was not measured. ``silenced`` (why
    select/ignore leave no rule that can fire, :func:`nothing_can_fire`) fails ``--fail-on``, and a list with no
    tools fails every gate: a gate that compares nothing never passes (docs/ci.md)."""
    if result.report is None:
        return ()
    out: list[GateResult] = []
    if gates.fail_on is not None:
        out.append(_fail_on(result, gates.fail_on) if silenced is None else _nothing_shown(gates.fail_on, silenced))
    if gates.min_score is not None:
        out.append(_min_score(result, gates.min_score))
    out += [_max_tokens(result, limit) for limit in gates.max_tokens]
    if gates.max_increase is not None:
        out.append(_max_increase(result, gates.max_increase))
    if gates.fail_on_new is not None:
        out.append(_fail_on(result, gates.fail_on_new, flag="--fail-on-new"))
    if gates.fail_on_reject:
        out.append(_fail_on_reject(result, gates.fail_on_reject))
    if result.report.tools_count == 0:  # `[]`, or a server whose build broke: nothing was checked, so no gate passes
        out = [gate if not gate.passed else replace(gate, passed=False, message=EMPTY_LIST) for gate in out]
    return tuple(out)


EMPTY_LIST = "the list has no tools, so there was nothing to check: an empty list never passes"


def run_gate(request: GateRequest) -> CheckResult:
    """Check the list, compare it with the baseline, evaluate the gates, and write the baseline and badge asked
    for. A server that could not be listed comes back with its outcome and no gates (the caller exits 3)."""
    from scanner.check import baseline

    asked = request.gates.any or request.baseline or request.save_baseline or request.badge
    if not request.check.measure and asked:
        raise InputError("--as prints only the provider's JSON: it takes no gate, baseline or badge")
    if request.gates.max_increase is not None and request.baseline is None:
        raise InputError("--max-increase compares with a baseline: give --baseline FILE too")
    if request.gates.fail_on_new is not None and request.baseline is None:
        raise InputError("--fail-on-new compares with a baseline: give --baseline FILE too")
    before = baseline.load(request.baseline) if request.baseline is not None else None
    result = run_check(request.check)
    if result.report is None:
        return result
    if request.badge is not None:
        from scanner.check import badge

        badge.write(request.badge, result)
    if before is not None:
        assert request.baseline is not None
        result = replace(result, comparison=baseline.compare(before, result, path=str(request.baseline)))
    silenced = nothing_can_fire(request.check.select, request.check.ignore)
    result = replace(result, gates=evaluate(result, request.gates, silenced=silenced))
    if request.save_baseline is not None:
        baseline.save(result, request.save_baseline)
    return result
