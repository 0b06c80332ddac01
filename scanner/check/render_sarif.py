"""``fathom check --format sarif``: SARIF 2.1.0 that code scanning can place.

Every rule of the catalogue is described in ``tool.driver.rules``; each finding is a result whose level follows
its severity (problem → error, warning → warning, note → note); a preview rule's result is a note whose message
starts "[preview]" (never scored or gated). For a ``--tools-file`` the result stands in the
file by a URI relative to the repository root (the nearest folder holding ``.git``, else the current folder)
on the line of the finding's JSON Pointer, with the pointer in the file (``/tools/3/inputSchema/...``) as its
logical location. A server has no file: its results carry the logical location only, or stand in the config
file (``anchor``, on its ``[tool.fathom]`` line) when one was used, so an upload can place them. Findings
ignored by ``--select``/``--ignore`` or a per-tool ignore are results too, with an external suppression giving
the reason.

``invocations`` says whether the check ran: a server that could not be reached gives a valid log with no
results, ``executionSuccessful: false`` and a ``toolExecutionNotification`` saying why, so ``> fathom.sarif``
always leaves a file the upload step can parse. The run's ``properties`` carry the score, what each rule cost
and the gates. ``partialFingerprints`` keep a finding's identity stable across runs. A rule has a ``helpUri``
(its section of ``docs/rules.md``) only when ``--rules-url`` or ``rules-url`` names where that file is published:
SARIF 2.1.0 wants an absolute URI there, and Fathom has no published address of its own.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from scanner import __version__
from scanner.check.locate import ToolLines, locate_file, relative_uri
from scanner.check.result import CheckResult
from scanner.models import Finding, Severity
from scanner.textsafe import markdown_text

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.PROBLEM: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _rules(rules_url: str | None) -> list[dict[str, Any]]:
    """Every rule; with ``rules_url`` (where ``docs/rules.md`` is published) each links its own section there."""
    from scanner.rules import RULES
    from scanner.rules.catalogue import anchor, rule_precision

    out: list[dict[str, Any]] = []
    for rule in RULES.values():
        described: dict[str, Any] = {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.slug.replace("-", " ")},
            "fullDescription": {"text": rule.doc},
            "help": {"text": rule.hint},
            "defaultConfiguration": {"level": _LEVEL[rule.severity]},
            # status: stable, or preview (its results appear only with --preview, never scored or gated);
            # precision: measured on hand-labelled real tool lists, 0-1, null when not measured.
            "properties": {
                "severity": rule.severity.label,
                "status": rule.status,
                "precision": rule_precision(rule.code),
            },
        }
        if rules_url is not None:
            # helpUri for SARIF readers; code scanning shows help.markdown beside an alert and not helpUri
            # (microsoft/sarif-sdk PR #2813), so the link is in the help too.
            url = f"{rules_url}#{anchor(rule.code)}"
            described["helpUri"] = url
            described["help"]["markdown"] = (
                f"{markdown_text(rule.hint, code_spans=True)}\n\n[{rule.code} {rule.slug} in the rule catalogue]({url})"
            )
        out.append(described)
    return out


class _Placer:
    """Locations for a result: the file and line when the list came from a file, else the anchor file."""

    def __init__(self, result: CheckResult, anchor: Path | None) -> None:
        self.lines: ToolLines | None = None
        self.uri: str | None = None
        self.anchor_line = 1
        if result.outcome is None and result.source != "standard input":
            self.uri, _ = relative_uri(result.source)
            self.lines = locate_file(result.source)
        elif anchor is not None:
            self.uri, _ = relative_uri(anchor)
            self.anchor_line = _table_line(anchor)

    def location(self, finding: Finding) -> dict[str, Any]:
        if finding.tool is not None:
            name = finding.tool
        else:  # a list finding, or one on the server's instructions (pointer "instructions")
            name = "(instructions)" if finding.pointer == "instructions" else "(tool list)"
        if self.lines is not None:
            pointer = self.lines.tool_pointer(finding.tool_index, finding.pointer)
        elif finding.tool_index is not None:
            pointer = f"/tools/{finding.tool_index}{finding.pointer or ''}"
        else:
            pointer = finding.pointer or "/tools"
        location: dict[str, Any] = {
            "logicalLocations": [{"name": name, "fullyQualifiedName": pointer, "kind": "object"}]
        }
        if self.uri is not None:
            line = self.lines.line(finding.tool_index, finding.pointer) if self.lines is not None else self.anchor_line
            location["physicalLocation"] = {
                "artifactLocation": {"uri": self.uri},
                "region": {"startLine": line},
            }
        return location


def _table_line(path: Path) -> int:
    """The line of ``[tool.fathom]`` in a pyproject.toml (1 in a fathom.toml, or when it cannot be read)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    return next((number for number, line in enumerate(lines, 1) if line.strip() == "[tool.fathom]"), 1)


def _result(finding: Finding, index: dict[str, int], placer: _Placer, reason: str | None = None) -> dict[str, Any]:
    from scanner.rules.registry import status_of

    identity = f"{finding.code}|{finding.tool}|{finding.pointer}"
    status = status_of(finding.code)
    # A preview rule's result is never scored or gated: a note, and its message says so (a code-scanning list
    # shows the level and the message, not the properties).
    preview = status == "preview"
    out: dict[str, Any] = {
        "ruleId": finding.code,
        "level": "note" if preview else _LEVEL[finding.severity],
        "message": {"text": ("[preview] " if preview else "") + f"{finding.message} Fix: {finding.hint}"},
        "locations": [placer.location(finding)],
        "partialFingerprints": {"fathomFinding/v1": hashlib.sha256(identity.encode()).hexdigest()[:32]},
        "properties": {
            "rule": finding.rule,
            "status": status,
            "pointer": finding.pointer,
            "details": dict(finding.details),
        },
    }
    if finding.code in index:
        out["ruleIndex"] = index[finding.code]
    if reason is not None:
        out["suppressions"] = [{"kind": "external", "justification": reason}]
    return out


def _properties(result: CheckResult) -> dict[str, Any]:
    from scanner.check.render_json import score_dict

    data: dict[str, Any] = {"source": result.source}
    score = score_dict(result)
    if score is not None:
        data["score"] = score
    if result.report is not None:
        from scanner.measure.verdicts import result_verdicts, to_json

        data["tokens"] = {provider: count.tokens for provider, count in result.report.tokens.items()}
        data["verdicts"] = to_json(result_verdicts(result))
    if result.gates:
        data["gates"] = [{"gate": gate.gate, "passed": gate.passed, "message": gate.message} for gate in result.gates]
    return data


def _invocation(result: CheckResult) -> dict[str, Any]:
    if result.report is not None or result.outcome is None or result.outcome.ok:
        return {"executionSuccessful": True}
    outcome = result.outcome
    said = f"{result.source}: {outcome.outcome.value}: {outcome.detail}"
    said += "".join(f"; {finding.code} {finding.rule}: {finding.message}" for finding in result.outcome_findings)
    return {
        "executionSuccessful": False,
        "toolExecutionNotifications": [
            {
                "level": "error",
                "message": {"text": said},
                "descriptor": {"id": outcome.outcome.value},
                "properties": {"status": outcome.outcome.value, "extra": dict(outcome.extra)},
            }
        ],
    }


def render(result: CheckResult, *, anchor: Path | None = None, rules_url: str | None = None) -> str:
    """The SARIF log; ``anchor`` (the config file) places a server's results, which have no file of their own;
    ``rules_url`` (``--rules-url``: the absolute address of a published ``docs/rules.md``) gives each rule a
    ``helpUri``, left out without it (no address is invented)."""
    rules = _rules(rules_url)
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    placer = _Placer(result, anchor)
    results = [_result(finding, index, placer) for finding in (result.report.findings if result.report else ())]
    results += [_result(item.finding, index, placer, item.reason) for item in result.ignored]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fathom",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [_invocation(result)],
                "results": results,
                "properties": _properties(result),
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=True, default=str) + "\n"
