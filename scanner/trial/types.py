"""What ``fathom try`` is asked, plans and finds: the frozen types :mod:`.run` fills and :mod:`.render` reads.

A floor under both, so the renderers read a report without importing the module that runs the trial, and the
trial saves its transcript through the renderers without either importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from scanner.check import CheckRequest
from scanner.models import TokenCount
from scanner.providers.api import Exchange, Limits, ModelAnswer, Stop
from scanner.textsafe import clean
from scanner.trial.cases import Case
from scanner.trial.model import Target
from scanner.trial.price import Price
from scanner.trial.validate import ArgError


@dataclass(frozen=True)
class TrialRequest:
    """What ``fathom try`` was asked: where the tools come from, which prompts, which model, how often."""

    target: Target
    cases: tuple[Case, ...]
    check: CheckRequest | None = None  # --tools-file / --url / --stdio / -- command
    db_url: str | None = None  # --db with --server
    server: str | None = None
    repeat: int = 1
    max_tokens: int = 1024
    limits: Limits = field(default_factory=Limits)
    save: Path | None = None


@dataclass(frozen=True)
class Plan:
    """Everything a run needs, resolved; nothing has been sent."""

    request: TrialRequest
    tools: tuple[Any, ...]
    view: list[dict[str, Any]]
    source: str
    toolset_sha256: str
    estimate: TokenCount  # Fathom's own estimate of the tool list's tokens per turn for this provider

    @property
    def target(self) -> Target:
        return self.request.target

    @property
    def requests(self) -> int:
        return len(self.request.cases) * self.request.repeat

    @property
    def needs_consent(self) -> bool:
        """A remote endpoint is asked first; a loopback one (a model on this machine) is not."""
        return not self.target.loopback

    @property
    def consent_text(self) -> str:
        prompts = len(self.request.cases)
        what = "the prompt" if prompts == 1 else f"{prompts} prompts"
        times = f", {self.request.repeat} times each" if self.request.repeat > 1 else ""
        return (
            f"fathom try will send {what}{times} ({self.requests:,} request{'s' if self.requests != 1 else ''}) and "
            f"the {len(self.view_names)} tool definitions of {clean(self.source)} (about {self.estimate.tokens:,} "
            f"tokens a turn) to {self.target.label} at {clean(self.target.shown_endpoint)}, model "
            f"{clean(self.target.model)}, "
            + (f"with the key in {self.target.key_env}." if self.target.key_env else "with no key.")
            + " No tool is called."
        )

    @property
    def view_names(self) -> list[str]:
        return self.target.api.declared_names(self.view)


@dataclass(frozen=True)
class CallCheck:
    """One call the model asked for, checked; ``schema_problem`` says why the arguments could not be checked."""

    name: str
    arguments: Any
    known: bool  # the tool is in the list
    errors: tuple[ArgError, ...] = ()  # against the tool's inputSchema
    arguments_error: str | None = None  # the arguments could not be read at all
    schema_problem: str | None = None
    expectation_errors: tuple[ArgError, ...] = ()  # against the case's expected values and schema

    @property
    def valid(self) -> bool:
        return self.known and self.arguments_error is None and self.schema_problem is None and not self.errors


@dataclass(frozen=True)
class Trial:
    """One prompt, one repetition: the model's answer, its calls checked, the tokens and the price."""

    case: int  # index into the plan's cases
    repetition: int
    answer: ModelAnswer
    calls: tuple[CallCheck, ...]
    price: Price
    exchange: Exchange
    chose_right: bool | None  # None for a plain prompt (nothing expected)
    valid: bool  # the (expected, or first) call's arguments fit the tool's schema
    matched: bool | None  # the expected values and schema hold (None: the case gives none)
    passed: bool
    unchecked: int = 0  # calls beyond MAX_CHECKED_CALLS, not checked

    @property
    def choice(self) -> str:
        return self.calls[0].name if self.calls else "(no call)"

    @property
    def outcome(self) -> str:
        """What happened, in a few plain words."""
        stop = self.answer.stop
        if stop is Stop.MAX_TOKENS:
            return "truncated at max tokens"
        if stop is Stop.REFUSAL:
            return "refused"
        if stop is Stop.FILTERED:
            return f"content filtered ({self.answer.stop_reason})"
        if stop is Stop.MALFORMED_CALL:
            return f"the provider could not parse the model's call ({self.answer.stop_reason})"
        if not self.calls:
            return "answered in text, no call" if self.answer.text.strip() else "no call and no text"
        unknown = [call.name for call in self.calls if not call.known]
        if unknown:
            return f"called {unknown[0]!r}, which is not in the list"
        if stop is Stop.OTHER:
            return f"stopped for {self.answer.stop_reason}"
        more = f" ({self.unchecked} more calls not checked)" if self.unchecked else ""
        return "called " + ", ".join(call.name for call in self.calls) + more


@dataclass(frozen=True)
class CaseSummary:
    case: Case
    trials: int
    right: int
    valid: int
    matched: int | None
    passed: int
    choices: dict[str, int]

    @property
    def missed(self) -> bool:
        return self.passed < self.trials


@dataclass(frozen=True)
class TrialReport:
    plan: Plan
    trials: tuple[Trial, ...]
    started_at: datetime
    summaries: tuple[CaseSummary, ...] = field(default=())

    @property
    def input_tokens(self) -> int | None:
        values = [trial.answer.usage.input_tokens for trial in self.trials]
        return None if any(value is None for value in values) else sum(v for v in values if v is not None)

    @property
    def output_tokens(self) -> int | None:
        values = [trial.answer.usage.output_tokens for trial in self.trials]
        return None if any(value is None for value in values) else sum(v for v in values if v is not None)

    @property
    def total_usd(self) -> Decimal | None:
        prices = [trial.price.usd for trial in self.trials]
        return None if not prices or any(p is None for p in prices) else sum((p for p in prices if p), Decimal(0))

    @property
    def score(self) -> float:
        return sum(trial.passed for trial in self.trials) / len(self.trials) if self.trials else 0.0

    @property
    def missed(self) -> int:
        return sum(summary.missed for summary in self.summaries)
