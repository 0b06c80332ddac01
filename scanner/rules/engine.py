"""The rule engine: run every selected rule over a tool list and return findings, worst first.

Order of findings: by severity (problems first), then by tool order; within a severity, list-wide findings
(``tool_index`` None: too many tools, list too large) come before per-tool ones, and findings of one tool are in
code order. Pair findings sort at their first tool. This is :meth:`scanner.models.Finding.sort_key`; the sort is
stable, so two pair findings of the same first tool keep the order of their second tools.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scanner.models import Finding
from scanner.rules.listwide import without_doctrine
from scanner.rules.registry import RULES, Hit, Rule, RuleContext, check_prefixes, make_finding, rule_selected
from scanner.rules.tools import ToolInfo, hidden_from_model
from scanner.rules.vocabulary import ListFacts

# A count a check writes before "tokens"/"characters" or after "(more than ", with four digits or more.
_COUNT = re.compile(r"(?<![\w.,])\d{4,}(?= (?:tokens|characters)\b)|(?<=\(more than )\d{4,}(?![\w.,]\d)")
_NO_WORDS = ", adds only 0 words not in its name."


def readable_message(message: str) -> str:
    """A check's message as a person reads it: counts with thousands separators (``22,884 tokens``) and no
    "adds only 0 words".

    Done here, where hits become findings, so the checks (whose source is part of the catalogue digest, tied to
    ``RULES_VERSION``) and what they find stay as they are. Only the text after the message's last quote mark is
    touched: server text (names, descriptions, sentences) is always quoted before it, and is never rewritten.
    """
    cut = max(message.rfind("'"), message.rfind('"')) + 1
    head, tail = message[:cut], message[cut:]
    if tail == _NO_WORDS and head.endswith('"'):  # MCP103 when every word of the description is in the name
        tail = ", adds no words beyond its name."
    if " tokens" not in tail and " characters" not in tail and "(more than " not in tail:
        return head + tail  # every count _COUNT reads stands beside one of these
    return head + _COUNT.sub(lambda match: f"{int(match[0]):,}", tail)


# Rules of the model-facing families (MCP1xx naming and usage, MCP2xx descriptions and parameters, MCP3xx the
# list) that still run on a tool the model never sees (rules.md, catalogue 6): what a client validates or sends
# whatever the model sees (a name clients refuse, two equal names, a schema that is not valid, sizes and counts).
_KEPT_FOR_APP_ONLY = frozenset(
    (
        "MCP101",
        "MCP107",
        "MCP201",
        "MCP204",
        "MCP210",
        "MCP214",
        "MCP215",
        "MCP216",
        "MCP301",
        "MCP304",
        "MCP305",
        "MCP306",
    )
)


def model_facing(code: str) -> bool:
    """Whether rule ``code`` is about a model choosing and filling a tool, so it skips a tool whose ``_meta``
    hides it from the model (MCP Apps' ``ui.visibility: ["app"]``): an app calls such a tool, no model picks it.
    MCP113 reads the visibility itself."""
    return code[:4] in ("MCP1", "MCP2", "MCP3") and code not in _KEPT_FOR_APP_ONLY


def _finding(rule: Rule, hit: Hit, tools: Sequence[ToolInfo], default: ToolInfo | None) -> Finding:
    index = hit.tool_index if hit.tool_index is not None else (default.index if default is not None else None)
    tool = tools[index] if index is not None and 0 <= index < len(tools) else None
    return make_finding(
        rule.code,
        tool=tool.tool_name if tool is not None else None,
        message=readable_message(hit.message),
        pointer=hit.pointer,
        details=hit.details,
        tool_index=index,
        fix=hit.fix,
    )


def run_rules(
    tools: Sequence[Any],
    ctx: RuleContext,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> list[Finding]:
    """Every finding of the selected rules on a raw tool list (as received: any JSON values), worst first.

    ``select``/``ignore`` are code prefixes ("MCP2", "MCP205", case-insensitive; ignore wins). A prefix that
    matches no rule raises :class:`~scanner.errors.InputError`. History rules (MCP5xx) never run here: they
    compare two scans. Nothing in ``tools`` can make this raise: hostile values become findings.
    """
    check_prefixes(select)
    check_prefixes(ignore)
    infos = [ToolInfo(raw, index) for index, raw in enumerate(tools)]
    facts = functools.cache(lambda: ListFacts.of(infos, lambda: without_doctrine([i.description_text for i in infos])))
    for info in infos:
        info.list_facts = facts
    findings: list[Finding] = []
    tool_rules, list_rules = _chosen(tuple(select), tuple(ignore), len(RULES))
    seen = [info for info in infos if not hidden_from_model(info)]
    for info in infos:
        hidden = len(seen) < len(infos) and hidden_from_model(info)
        for rule, check in tool_rules:
            if hidden and model_facing(rule.code):
                continue
            for hit in check(info, ctx):
                findings.append(_finding(rule, hit, infos, info))
    for rule, check in list_rules:
        # A list rule about choosing among tools sees only the tools the model sees (their ``index`` stays the
        # list's, so findings still name the right tool); counts and sizes see every tool sent.
        chosen = seen if model_facing(rule.code) else infos
        for hit in check(chosen, ctx):
            findings.append(_finding(rule, hit, infos, None))
    findings.sort(key=Finding.sort_key)
    return findings


Checks = tuple[tuple[Rule, Callable[..., Iterable[Hit]]], ...]


@functools.lru_cache(maxsize=64)
def _chosen(select: tuple[str, ...], ignore: tuple[str, ...], registered: int) -> tuple[Checks, Checks]:
    """The selected rules with a check, per-tool ones then list ones, each in code order (once per selection and
    catalogue size: a rule registered later is not missed)."""
    chosen = [rule for rule in RULES.values() if rule.check is not None and rule_selected(rule.code, select, ignore)]
    return (
        tuple((rule, rule.check) for rule in chosen if rule.scope == "tool" and rule.check is not None),
        tuple((rule, rule.check) for rule in chosen if rule.scope == "list" and rule.check is not None),
    )
