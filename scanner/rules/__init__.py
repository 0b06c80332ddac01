"""The rule catalogue (MCP101-MCP810): what a model would stumble over in a server's tool list.

``docs/rules.md`` is generated from it (:mod:`scanner.rules.catalogue`); each rule has a status (stable, preview,
deprecated, removed), and ``catalogue_digest()`` pins the catalogue a ``RULES_VERSION`` names.

Public surface::

    RULES: Mapping[str, Rule]          every rule by code, in code order (code, slug, severity, hint, doc, status)
    RULES_VERSION: str                 bumped whenever a rule's meaning or output shape changes
    RuleContext(count_tokens, list_tokens_max, cost_text, cost_method)
    run_rules(tools, ctx, *, select=(), ignore=()) -> list[Finding]     worst first, then tool order
    rule_selected(code, select=(), ignore=()) -> bool
    check_prefixes(prefixes) -> None   InputError for a prefix that matches no rule
    make_finding(code, *, tool, message, pointer=None, details=None, tool_index=None) -> Finding

One module per family: :mod:`naming` (MCP1xx), :mod:`schema` (MCP2xx), :mod:`listwide` (MCP3xx),
:mod:`safety` (MCP4xx), :mod:`history` (MCP5xx, registered for the catalogue; checked by ``scanner.measure.history``),
:mod:`lanes` (MCP6xx, what each credential sees; checked by :func:`lanes.lane_findings` for ``fathom doctor``),
:mod:`registrydata` (MCP7xx, the registry entry itself; checked by :func:`registrydata.registry_findings`),
:mod:`clients_reject` and :mod:`clients_limits` (MCP8xx, what clients reject;
 :mod:`scanner.measure.verdicts` gives each client's verdict).
Importing this package registers them all.
"""

from __future__ import annotations

from scanner.rules import (  # noqa: F401  (registration)
    clients_limits,
    clients_reject,
    history,
    lanes,
    listwide,
    naming,
    registrydata,
    safety,
    schema,
)
from scanner.rules.engine import run_rules
from scanner.rules.registry import (
    RULES,
    RULES_VERSION,
    Hit,
    Rule,
    RuleContext,
    check_prefixes,
    make_finding,
    register,
    rule_selected,
)

__all__ = [
    "RULES",
    "RULES_VERSION",
    "Hit",
    "Rule",
    "RuleContext",
    "check_prefixes",
    "make_finding",
    "register",
    "rule_selected",
    "run_rules",
]
