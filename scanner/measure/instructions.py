"""The server's ``instructions``: what a model reads beside the tool list, measured and checked like it.

The MCP client keeps the text a server sends in ``initialize`` (or the 2026 discovery result) in the outcome's
``extra["instructions"]``. Here it is hashed (the store keeps each text once, like a toolset), counted per
provider as a system text (:mod:`scanner.providers.system`), and checked by the safety rules that apply to any
text a model reads: MCP401 ``hidden-characters`` and MCP402 ``model-directed-instructions``. Their findings have
``tool`` None, ``pointer`` ``"instructions"`` and ``details["field"] == "instructions"``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from scanner.models import Finding, InstructionsCost
from scanner.rules import make_finding, rule_selected
from scanner.rules.safety import MAX_LISTED, hidden_characters, model_directed_phrases
from scanner.wire import clean_str

FIELD = "instructions"


def instructions_text(extra: Mapping[str, Any]) -> str | None:
    """The instructions a scan captured, or None when the server sent none (or something that is not text)."""
    text = extra.get(FIELD)
    return clean_str(text) if isinstance(text, str) and text else None


def text_sha256(text: str) -> str:
    """The content hash instructions are stored under: sha256 of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def measure_instructions(text: str) -> InstructionsCost:
    """The text's hash and its cost per turn with every stored provider key."""
    from scanner.providers.system import instructions_tokens

    return InstructionsCost(text=text, sha256=text_sha256(text), tokens=instructions_tokens(text))


def instruction_findings(text: str, *, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Finding]:
    """MCP401 and MCP402 over the instructions, under the same ``--select``/``--ignore`` as the tool rules."""
    findings: list[Finding] = []
    hidden = hidden_characters(text)
    if hidden and rule_selected("MCP401", select, ignore):
        findings.append(
            make_finding(
                "MCP401",
                tool=None,
                message=f"The server's instructions hold invisible or direction-changing characters: "
                f"{', '.join(hidden[:5])}{', …' if len(hidden) > 5 else ''}.",
                pointer=FIELD,
                details={"field": FIELD, "characters": hidden[:MAX_LISTED]},
            )
        )
    phrases = model_directed_phrases(text)
    if phrases and rule_selected("MCP402", select, ignore):
        listed = list(dict.fromkeys(" ".join(phrase.split())[:120] for _, phrase in phrases))
        shown = ", ".join(f'"{phrase}"' for phrase in listed[:3])
        findings.append(
            make_finding(
                "MCP402",
                tool=None,
                message=f"The server's instructions speak to the model against its user or other tools: {shown}.",
                pointer=FIELD,
                details={"field": FIELD, "phrases": listed[:MAX_LISTED], "kinds": [kind for kind, _ in phrases]},
            )
        )
    return findings
