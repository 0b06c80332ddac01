"""``fathom check --format sarif``: SARIF 2.1.0 for code-scanning uploads.

Every rule of the catalogue is described in ``tool.driver.rules``; each finding is a result whose level follows
its severity (problem → error, warning → warning, note → note), located in the checked file (or the server URL)
with the tool and JSON Pointer as a logical location. ``partialFingerprints`` keep a finding's identity stable
across runs so code scanning can tell new alerts from old ones.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from scanner import __version__
from scanner.check import CheckResult
from scanner.models import Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.PROBLEM: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _rules() -> list[dict[str, Any]]:
    from scanner.rules import RULES

    return [
        {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.slug.replace("-", " ")},
            "fullDescription": {"text": rule.doc},
            "help": {"text": rule.hint},
            "defaultConfiguration": {"level": _LEVEL[rule.severity]},
            "properties": {"severity": rule.severity.label},
        }
        for rule in RULES.values()
    ]


def render(result: CheckResult) -> str:
    rules = _rules()
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    uri = result.source if result.source != "standard input" else "stdin"
    results = []
    for finding in result.report.findings if result.report else ():
        if finding.tool is not None:
            logical = finding.tool
        else:  # a list finding, or one on the server's instructions (pointer "instructions")
            logical = "(instructions)" if finding.pointer == "instructions" else "(tool list)"
        identity = f"{finding.code}|{finding.tool}|{finding.pointer}"
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": index.get(finding.code, -1),
                "level": _LEVEL[finding.severity],
                "message": {"text": f"{finding.message} Fix: {finding.hint}"},
                "locations": [
                    {
                        "physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": 1}},
                        "logicalLocations": [
                            {"name": logical, "fullyQualifiedName": f"{logical}{finding.pointer or ''}"}
                        ],
                    }
                ],
                "partialFingerprints": {"fathomFinding/v1": hashlib.sha256(identity.encode()).hexdigest()[:32]},
                "properties": {
                    "rule": finding.rule,
                    "pointer": finding.pointer,
                    "details": dict(finding.details),
                },
            }
        )
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
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=True, default=str) + "\n"
