"""The rule registry: one table of rules that the checker, ``fathom rules`` and every report read.

A rule is registered with :func:`register` (a decorator on its check function) and carries its stable ``code``,
``slug``, :class:`~scanner.models.Severity`, ``hint`` (the fix, from the catalogue table) and ``doc`` (what it
checks, why a model stumbles, a bad and a good example). A check *yields* :class:`Hit` records; the engine turns
them into :class:`~scanner.models.Finding` objects, so no rule builds a finding by hand and every finding of a code
carries the same slug, severity and hint. Codes never change meaning: a retired rule keeps its code unused.

Scopes:

- ``tool``: the check is called once per tool with a :class:`~scanner.rules.tools.ToolInfo`.
- ``list``: called once with every tool's ``ToolInfo`` (pair and count rules).
- ``history``: needs two scans of one server; registered here only so the catalogue lists it. The comparison
  lives elsewhere (``scanner.measure.history``) and builds its findings with :func:`make_finding`.
- ``lanes``: needs connections with and without a credential; likewise registered for the catalogue, checked by
  :func:`scanner.rules.lanes.lane_findings`.
- ``registry``: called once per registry entry (a ``server.json`` object) with a
  :class:`~scanner.rules.registrydata.RegistryContext`, by :func:`scanner.rules.registrydata.registry_findings`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scanner.errors import InputError
from scanner.models import Finding, Severity

Scope = Literal["tool", "list", "history", "lanes", "registry"]
Status = Literal["stable", "preview", "deprecated", "removed"]
"""``stable``: at least 80 % of its findings on real tool lists are right; it counts in the score. ``preview``:
new or less precise: it runs and its findings are stored, but they are shown only when asked for (``fathom check
--preview``), marked ``preview``, and never count in the score (:mod:`scanner.measure.score`) or a gate.
``deprecated``: still runs, will be removed; the doc says what replaces it. ``removed``: never runs; the code
stays listed so it is never reused."""

STATUSES: tuple[Status, ...] = ("stable", "preview", "deprecated", "removed")

# Bump whenever any rule's condition, threshold or message shape changes: stored findings are keyed by it, and a
# store re-scores its toolsets when the catalogue it was scored with is not this one. tests/rules/test_catalogue.py
# ties every version to the digest of the catalogue it names (see :func:`catalogue_digest`).
RULES_VERSION = "6"


@dataclass(frozen=True)
class RuleContext:
    """What the rules need from outside: the tokenizer and the list's price, supplied by the caller.

    ``count_tokens`` counts o200k_base tokens of a text (MCP210). It must be a byte-level BPE count, which never
    exceeds the text's UTF-8 length: MCP210 skips counting schemas whose compact JSON is at most 1000 bytes.
    ``list_tokens_max`` is what the whole list costs per turn with the most expensive provider (MCP306).
    ``cost_text`` counts what a piece of a tool's text costs per turn with the most expensive provider (MCP215,
    MCP307); ``cost_method`` says how (stored in the finding's details).
    """

    count_tokens: Callable[[str], int]
    list_tokens_max: int = 0
    cost_text: Callable[[str], int] | None = None
    cost_method: str = ""
    tool_tokens_max: Sequence[int] = ()
    """Each tool's own cost per turn with the most expensive provider, by list index (MCP107); when the caller
    has none, :meth:`tool_cost` counts the tool's JSON with :meth:`cost`."""
    tool_tokens_method: str = ""
    server_key: str = ""
    """The name a client gives the server in its configuration, from which it builds each tool's name (MCP809):
    ``check --server-key``, else the registry entry's last name segment, else ``serverInfo.name``; empty when
    none is known (MCP809 then does not run)."""

    def cost(self, text: str) -> tuple[int, str]:
        """What ``text`` costs per turn with the most expensive provider, and how that was counted.

        Uses ``cost_text`` (the caller's provider-aware count) when given, else the plain o200k_base count.
        """
        if self.cost_text is not None:
            return self.cost_text(text), self.cost_method
        return self.count_tokens(text), "o200k_base"

    def tool_cost(self, index: int) -> tuple[int, str] | None:
        """What tool ``index`` costs per turn with the most expensive provider, and how; None when not given."""
        if 0 <= index < len(self.tool_tokens_max):
            return self.tool_tokens_max[index], self.tool_tokens_method
        return None


@dataclass(frozen=True)
class Hit:
    """One thing a check found. The engine adds code, slug, severity, hint and the tool's name.

    ``tool_index`` is set by list rules that blame a tool (the first of a pair); tool rules leave it None and the
    engine uses the tool being checked. A list rule with ``tool_index`` None reports on the list as a whole.
    """

    message: str
    pointer: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    tool_index: int | None = None
    fix: str | None = None
    """This finding's own fix, naming the key to add and where (``Add "description" to properties.q.``); the
    finding's hint is this followed by the rule's hint."""


@dataclass(frozen=True)
class Rule:
    """One catalogue entry. ``check`` is None for history rules (their check compares two scans elsewhere)."""

    code: str
    slug: str
    severity: Severity
    hint: str
    doc: str
    scope: Scope
    check: Callable[..., Iterator[Hit]] | None = None
    status: Status = "stable"


class _Catalogue(Mapping[str, Rule]):
    """A read-only mapping of code to rule that always iterates in code order, whatever the import order."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}
        self._order: list[str] = []

    def add(self, rule: Rule) -> None:
        if rule.code in self._rules:
            raise ValueError(f"rule code {rule.code} is registered twice")
        if any(existing.slug == rule.slug for existing in self._rules.values()):
            raise ValueError(f"rule slug {rule.slug} is registered twice")
        self._rules[rule.code] = rule
        self._order = sorted(self._rules)

    def __getitem__(self, code: str) -> Rule:
        return self._rules[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._rules)

    def __repr__(self) -> str:
        return f"RULES({', '.join(self._order)})"


RULES: Mapping[str, Rule] = _Catalogue()
"""Every registered rule by code, in code order (MCP101 first)."""


def register(
    code: str,
    slug: str,
    severity: Severity,
    *,
    hint: str,
    doc: str,
    scope: Scope = "tool",
    status: Status = "stable",
) -> Callable[[Callable[..., Iterator[Hit]]], Callable[..., Iterator[Hit]]]:
    """Register the decorated check function as rule ``code``; the function itself is returned unchanged."""

    def decorator(check: Callable[..., Iterator[Hit]]) -> Callable[..., Iterator[Hit]]:
        _add(
            Rule(
                code=code,
                slug=slug,
                severity=severity,
                hint=hint,
                doc=_clean(doc),
                scope=scope,
                check=None if status == "removed" else check,
                status=status,
            )
        )
        return check

    return decorator


def register_history(
    code: str,
    slug: str,
    severity: Severity,
    *,
    hint: str,
    doc: str,
    status: Status = "stable",
    scope: Scope = "history",
) -> None:
    """Register a rule whose check compares two scans (or two lanes) and is called outside the engine."""
    _add(Rule(code=code, slug=slug, severity=severity, hint=hint, doc=_clean(doc), scope=scope, status=status))


def catalogue_digest() -> str:
    """sha256 over every rule's code, slug, severity, status, scope, hint, doc and check function's source.

    Any change to what a rule is or says, or to its check function, changes the digest; the catalogue tests pin
    one digest per :data:`RULES_VERSION`, so such a change fails until the version is bumped (and stored history
    is re-scored). Shared helpers a check calls are not part of it: a change there needs the same care.
    """
    import hashlib
    import inspect
    import json

    parts = []
    for rule in RULES.values():
        source = ""
        if rule.check is not None:
            try:
                source = inspect.getsource(rule.check)
            except (OSError, TypeError):  # pragma: no cover - only without source files (a zipped install)
                source = rule.check.__qualname__
        parts.append([rule.code, rule.slug, rule.severity.label, rule.status, rule.scope, rule.hint, rule.doc, source])
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def status_of(code: str) -> Status:
    """The status of rule ``code`` (``stable`` for a code this catalogue does not know, as the score reads it)."""
    rule = RULES.get(code)
    return rule.status if rule is not None else "stable"


def is_preview(code: str) -> bool:
    """Whether rule ``code`` is ``preview``: its findings are hidden unless asked for, and never scored or gated."""
    return status_of(code) == "preview"


def _add(rule: Rule) -> None:
    catalogue = RULES
    assert isinstance(catalogue, _Catalogue)
    catalogue.add(rule)


def _clean(doc: str) -> str:
    return " ".join(doc.split())


def make_finding(
    code: str,
    *,
    tool: str | None,
    message: str,
    pointer: str | None = None,
    details: Mapping[str, Any] | None = None,
    tool_index: int | None = None,
    fix: str | None = None,
) -> Finding:
    """A :class:`Finding` of rule ``code`` with the catalogue's slug, severity and hint.

    For rules whose check runs elsewhere (MCP501/MCP502, comparing two scans) and for the engine itself. ``fix``
    (a finding's own first step, naming the key to add) goes before the rule's hint.
    Raises KeyError for a code that is not registered: a finding of an unknown rule is a programming error.
    """
    rule = RULES[code]
    return Finding(
        code=rule.code,
        rule=rule.slug,
        severity=rule.severity,
        tool=tool,
        message=message,
        hint=f"{fix} {rule.hint}" if fix else rule.hint,
        pointer=pointer,
        details=dict(details or {}),
        tool_index=tool_index,
    )


def _normalise(prefixes: Sequence[str]) -> tuple[str, ...]:
    return tuple(prefix.strip().upper() for prefix in prefixes if prefix.strip())


def check_prefixes(prefixes: Sequence[str]) -> None:
    """Raise :class:`~scanner.errors.InputError` (exit 2) for a code prefix that matches no rule (a typo)."""
    for prefix in _normalise(prefixes):
        if not _known_prefix(prefix, len(RULES)):
            raise InputError(f"no rule code starts with {prefix!r}; `fathom rules` lists them")


@functools.lru_cache(maxsize=256)
def _known_prefix(prefix: str, registered: int) -> bool:
    """Whether some rule's code starts with ``prefix`` (once per prefix and catalogue size: a scan checks the same
    selection for every list it measures)."""
    return any(code.startswith(prefix) for code in RULES)


def rule_selected(code: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """Whether ``code`` runs under ``select``/``ignore`` code prefixes ("MCP2", "MCP205"; case-insensitive).

    An empty ``select`` selects every rule. ``ignore`` wins over ``select``.
    """
    code = code.upper()
    chosen = _normalise(select)
    if chosen and not any(code.startswith(prefix) for prefix in chosen):
        return False
    return not any(code.startswith(prefix) for prefix in _normalise(ignore))
