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
    "Catalogue 6 (rules.md, catalogue 6; issue 45) changed these statuses. Every preview rule about tool lists "
    "was labelled again on real lists, 69 more of them collected for fresh labels, most from the official "
    "registry's npm and PyPI packages (`tests/fixtures/real/more/`): MCP307 became `stable` (labelled one finding per "
    "repeated sentence, after it stopped reporting a parameter's own doc line: 88 of 103 right, 68 of 81 on "
    "lists collected after that change; 86 of 96 once it no longer cut sentences at a URL's dots nor reported "
    "a field's or a default's doc line); MCP111 became `stable` (6 of 7 right, after it stopped reporting a "
    "read that states its price: the 41 paid reads of one server were all wrong; those 7 are every finding it "
    "makes on the lists kept here; 32 more lists collected for it, every tool annotated (934 tools), gave it "
    "one, wrong: a dry run named `deployPlan` rightly marked read-only, so it no longer reports a write name "
    "whose description says the call is a dry run; short of the 10 labels asked for); MCP103, MCP105, MCP206, "
    "MCP207, MCP209, MCP303, MCP404 and MCP807 were retired (status `removed`: they never run, their codes are "
    "never reused; each one's doc says what it measured), as rules that stayed under 80 % after tightening, on "
    "fresh labels where the lists gave any. MCP217 and MCP308 became `stable` (9 of 10 and "
    "13 of 14 right on a hand-labelled sample of real lists not kept here), and MCP805 `stable` where the type "
    "list sits on a path Gemini's `parameters` keeps (8 of 10 there, both wrong ones outside those paths). MCP112 "
    "reads `list` after insert/add/create/delete as a noun. MCP218 is new and starts as `preview`. Tools that MCP "
    "Apps' `_meta.ui.visibility` hides from the model are skipped by the rules about choosing and filling a tool "
    "(MCP1xx, MCP2xx, MCP3xx except names clients refuse, schema validity, sizes and counts). Catalogue 5 had made "
    "MCP402 `preview` and MCP106 `stable`.",
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
    """What is known of rule ``code``'s precision, in words, the same everywhere it is shown (``fathom rule``, the
    check renderers, docs/rules.md, the site's rules page): ``62 % right on real lists (21 of 34 labelled)``;
    with fewer labels than a measurement needs, the counts and that they are too few; labels on lists not kept
    here, with where they come from; ``not yet measured`` only when no finding of it was ever labelled."""
    entry = _measured().get(code)
    rule = RULES.get(code)
    if rule is not None and rule.status == "removed":
        kept = int(entry.get("stale") or 0) if isinstance(entry, dict) else 0
        return f"retired, it never runs ({kept} labels of its findings kept; its doc says what it measured)"
    if not isinstance(entry, dict):
        return "not yet measured: no finding of it labelled on real lists"
    said: list[str] = []
    value = rule_precision(code)
    labelled, right = int(entry.get("labelled") or 0), int(entry.get("right") or 0)
    if value is not None:
        said.append(f"{round(value * 100)} % right on real lists ({right} of {labelled} labelled)")
    elif labelled:
        needed = int(precision().get("min_labelled", 5))
        said.append(
            f"{right} of {labelled} labelled findings right on real lists, too few to measure ({needed} needed)"
        )
    elsewhere = entry.get("elsewhere")
    if isinstance(elsewhere, dict) and elsewhere.get("labelled"):
        said.append(
            f"{elsewhere['right']} of {elsewhere['labelled']} right on real lists not kept here "
            f"({elsewhere.get('where', 'elsewhere')})"
        )
    return "; ".join(said) if said else "not yet measured: no finding of it labelled on real lists"


def _precision_section() -> list[str]:
    measured = precision()
    if not measured:
        return []
    rules = measured.get("rules", {})
    out = [
        "## Precision on real tool lists",
        "",
        f"Measured by `python scripts/precision.py` on {measured['servers']} real servers' saved tool lists "
        f"({measured['tools']:,} tools; `tests/fixtures/real/` and `real/more/`, listed by "
        "`scripts/collect_real.py`): every "
        "finding of a rule that fires a few times, a sample spread over the servers of the others, labelled right "
        "or wrong by hand, with a one-line reason each "
        "(`tests/fixtures/real/labels.json`). A finding is right when a careful server author would agree it points "
        f"at a real problem for a model. A rule needs {measured['min_labelled']} labelled findings to be measured; "
        f"it is `stable` only at {round(measured['stable_at'] * 100)} % or more, and only stable rules count in "
        "the score (docs/score.md). A rule with fewer labels shows its counts as too few; labels on real lists not "
        "kept here are shown apart, with where they come from (`tests/fixtures/labels_elsewhere.json`). A rule "
        "with no labelled finding anywhere is *not yet measured*: it keeps the status its fixtures and history "
        "gave it, and a new one starts as `preview`.",
        "",
        "| code | status | findings | servers | labelled | right | precision |",
        "|---|---|---|---|---|---|---|",
    ]
    right = labelled = 0
    for code, rule in RULES.items():
        entry = rules.get(code)
        if entry is None:
            continue
        shown = _shown_precision(entry, rule.status)
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


def _shown_precision(entry: dict[str, Any], status: str) -> str:
    """The table's precision cell: a measurement, the counts when too few, or "not yet measured" with none; a
    retired rule's says so (its doc says what it measured)."""
    if status == "removed":
        return f"retired ({entry['stale']} labels kept; see its doc)"
    cells = []
    if entry["precision"] is not None:
        cells.append(f"{round(entry['precision'] * 100)} %")
    elif entry["labelled"]:
        cells.append(f"too few labels ({entry['right']} of {entry['labelled']} right)")
    elsewhere = entry.get("elsewhere")
    if isinstance(elsewhere, dict):
        cells.append(f"{elsewhere['right']} of {elsewhere['labelled']} right elsewhere ({elsewhere['where']})")
    return _cell("; ".join(cells) or "not yet measured")


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


def anchor(code: str) -> str:
    """The fragment of a rule's section in ``docs/rules.md`` (its ``### CODE`` heading, as GitHub and the docs
    link it): ``MCP101`` -> ``mcp101``. SARIF's ``helpUri`` points here (``check --rules-url``)."""
    return code.lower()


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
                f"| [{r.code}](#{anchor(r.code)}) | {r.slug} | {r.severity.label} | {r.status} | {_cell(r.hint)} |"
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
