"""``docs/rules.md``, generated from the rule registry: the one place the catalogue is written down is the code.

``python -m scanner.rules.catalogue > docs/rules.md`` regenerates it; ``tests/rules/test_catalogue.py`` fails when
the file and the registry disagree. ``fathom rules`` and ``fathom rule CODE`` print from the same table.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from scanner.rules import RULES, RULES_VERSION
from scanner.rules.registry import Rule

FAMILIES = (
    ("MCP1", "Names and descriptions"),
    ("MCP2", "Input schemas"),
    ("MCP3", "The list as a whole"),
    ("MCP4", "Safety"),
    ("MCP5", "Over time (two scans of one server)"),
    ("MCP6", "Lanes (with and without a credential)"),
    ("MCP7", "Registry data (the entry as published)"),
    ("MCP8", "What clients reject"),
)

STATUS_MEANINGS = (
    (
        "stable",
        "At least 80 % of its findings on real tool lists are right (hand-labelled, below); it counts in the score "
        "and the gates.",
    ),
    (
        "preview",
        "New, or under 80 % precision on real lists: measured and stored, but shown only when asked for "
        "(`fathom check --preview`, or `preview = true` in the config), then marked `preview` in every format with "
        "the rule's measured precision; on the site, listed apart from the scored findings. Never counted in the "
        "score or a gate.",
    ),
    ("deprecated", "Still runs; it will be removed, and its text says what replaces it."),
    ("removed", "Never runs; the code stays listed so it is never reused."),
)


# What the newest catalogue changed in status, and on which labels (rules.md, "Catalogue 5: what changed from 4").
STATUS_CHANGES = (
    "Catalogue 5 changed two statuses on new labels: MCP402 became `preview` (right 1 time in 5 on real lists as "
    "catalogue 4 wrote it; its secret clause now takes imperative verbs only and names the field), and MCP106 "
    "became `stable` (12 of 14 right on a hand-labelled sample of real lists' findings; it does not fire on the "
    "lists kept here). MCP113, MCP217 and MCP404 are new and start as `preview`. No stable rule measures under "
    "80 % on the labels below.",
)

PRECISION = Path(__file__).with_name("precision.json")


def precision() -> dict[str, Any]:
    """The per-rule precision ``scripts/precision.py`` measured on real tool lists (empty when never measured)."""
    if not PRECISION.exists():
        return {}
    return dict(json.loads(PRECISION.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=1)
def _measured() -> dict[str, Any]:
    return dict(precision().get("rules", {}))


def rule_precision(code: str) -> float | None:
    """Rule ``code``'s measured precision on real tool lists (0-1), or None when it was not measured (it fired
    too rarely on them, or never)."""
    entry = _measured().get(code)
    value = entry.get("precision") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def precision_label(code: str) -> str:
    """``62 % right on real lists (21 of 34 labelled)``, or ``not yet measured on real lists``."""
    entry = _measured().get(code)
    value = rule_precision(code)
    if value is None or not isinstance(entry, dict):
        return "not yet measured on real lists"
    return f"{round(value * 100)} % right on real lists ({entry['right']} of {entry['labelled']} labelled)"


def _precision_section() -> list[str]:
    measured = precision()
    if not measured:
        return []
    rules = measured.get("rules", {})
    out = [
        "## Precision on real tool lists",
        "",
        f"Measured by `python scripts/precision.py` on {measured['servers']} real servers' saved tool lists "
        f"({measured['tools']:,} tools; `tests/fixtures/real/`, listed by `scripts/collect_real.py`): every "
        "finding of a rule that fires a few times, a sample spread over the servers of the others, labelled right "
        "or wrong by hand, with a one-line reason each "
        "(`tests/fixtures/real/labels.json`). A finding is right when a careful server author would agree it points "
        f"at a real problem for a model. A rule needs {measured['min_labelled']} labelled findings to be measured; "
        f"it is `stable` only at {round(measured['stable_at'] * 100)} % or more, and only stable rules count in "
        "the score (docs/score.md). Rules that never fired on these lists are not measured: they keep the status "
        "their fixtures and history gave them, and new ones start as `preview`.",
        "",
        "| code | status | findings | servers | labelled | right | precision |",
        "|---|---|---|---|---|---|---|",
    ]
    right = labelled = 0
    for code, rule in RULES.items():
        entry = rules.get(code)
        if entry is None:
            continue
        shown = "not measured" if entry["precision"] is None else f"{round(entry['precision'] * 100)} %"
        out.append(
            f"| {code} | {rule.status} | {entry['findings']} | {entry['servers']} | {entry['labelled']} | "
            f"{entry['right']} | {shown} |"
        )
        if rule.status == "stable":
            right, labelled = right + entry["right"], labelled + entry["labelled"]
    if labelled:
        out += [
            "",
            f"The stable rules together: {right} of {labelled} labelled findings right "
            f"({round(100 * right / labelled)} %).",
        ]
    out.append("")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _family(rule: Rule) -> str:
    return next((title for prefix, title in FAMILIES if rule.code.startswith(prefix)), "Other")


def _verdict_clients() -> list[str]:
    """The clients a verdict is given for, what their sources cover, and the dated notes (rules.md, catalogue 6)."""
    from scanner.rules.clients_reject import DATED_NOTES, EARLIER, REJECT_CLIENTS

    out = [
        'Every "Will it load?" verdict speaks of these clients, as their sources cover them (`--fail-on-reject` '
        "takes the keys, or `all`). The rules that decide a verdict are MCP801-MCP803 and MCP808-MCP810, MCP101 "
        "(a name the APIs refuse), and MCP101, MCP201, MCP205, MCP214 and MCP216 when the list is not valid MCP; each "
        "rule's doc below names every client it changes, with the source, the verbatim error, the effect and the "
        "versions.",
        "",
        "| client | key | the sources cover |",
        "|---|---|---|",
    ]
    out += [f"| {client.label} | `{client.key}` | {_cell(client.covers)} |" for client in REJECT_CLIENTS]
    out += ["", "Dated notes (refusals a client has since stopped; they decide no verdict):", ""]
    out += [f"- {code}, {client}: {note}." for code, notes in DATED_NOTES.items() for client, note in notes.items()]
    out += ["", "Earlier behaviour (dated notes beside a verdict the current behaviour decides):", ""]
    out += [f"- {code}, {client}: {note}." for code, notes in EARLIER.items() for client, note in notes.items()]
    return [*out, ""]


def markdown() -> str:
    """The whole of ``docs/rules.md``."""
    out = [
        "# Rule catalogue",
        "",
        "<!-- Generated from scanner/rules by `python -m scanner.rules.catalogue > docs/rules.md`; do not edit. -->",
        "",
        f"Catalogue version **{RULES_VERSION}**. Stored findings carry the version they were scored with;",
        "`fathom rescore` brings stored history onto this one. `fathom rules` lists the catalogue,",
        "`fathom rule CODE` explains one rule with its status and measured precision, `fathom check",
        "--select/--ignore` take code prefixes, and `fathom check --preview` also shows preview rules' findings.",
        "",
        "Status of a rule:",
        "",
    ]
    out += [f"- **{status}**: {meaning}" for status, meaning in STATUS_MEANINGS]
    out += ["", *STATUS_CHANGES, ""]
    current = None
    for rule in RULES.values():
        family = _family(rule)
        if family != current:
            current = family
            out += [f"## {family}", "", "| code | slug | severity | status | fix |", "|---|---|---|---|---|"]
            out += [
                f"| [{r.code}](#{r.code.lower()}) | {r.slug} | {r.severity.label} | {r.status} | {_cell(r.hint)} |"
                for r in RULES.values()
                if _family(r) == family
            ]
            out.append("")
            if family == "What clients reject":
                out += _verdict_clients()
    out += _precision_section()
    out += ["## Every rule", ""]
    for rule in RULES.values():
        out += [
            f"### {rule.code}",
            "",
            f"`{rule.slug}` · {rule.severity.label} · {rule.status}",
            "",
            rule.doc,
            "",
            f"Fix: {rule.hint}",
            "",
        ]
    from scanner.providers.strict import catalogue_section  # a view beside the rules, documented with them

    out += catalogue_section()
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - the regeneration command
    sys.stdout.write(markdown())
