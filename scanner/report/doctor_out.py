"""``fathom doctor`` output: plain text for people, JSON for machines. Server text is escaped for the terminal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scanner.scan.doctor import Diagnosis
from scanner.textsafe import clean_text

_VERDICTS = {
    "healthy": "healthy",
    "not-compared": "answered; not compared (no credential given)",
    "silent-lane": "a silent lane",
    "auth-undiscoverable": "authentication cannot be discovered",
    "unreachable": "could not connect",
    "not-http": "not checked (stdio)",
}


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """A diagnosis as JSON-ready data (no credential value is ever part of it)."""
    signals = diagnosis.signals
    return {
        "server": diagnosis.server,
        "url": diagnosis.url,
        "verdict": diagnosis.verdict,
        "configured_lane": diagnosis.configured,
        "explanation": diagnosis.explanation,
        "lanes": [
            {
                "lane": lane.label,
                "outcome": lane.outcome.outcome.value,
                "detail": lane.outcome.detail,
                "tools": len(lane.tools),
                "tool_names": list(lane.tools),
                "only_this_lane": list(lane.only_here),
            }
            for lane in diagnosis.lanes
        ],
        "auth_signals": {
            "status": signals.status,
            "www_authenticate": dict(signals.challenge) if signals.challenge else None,
            "resource_metadata_url": signals.resource_metadata_url,
            "resource_metadata": dict(signals.resource_metadata) if signals.resource_metadata else None,
            "authorization_server_url": signals.authorization_server_url,
            "authorization_server": dict(signals.authorization_server) if signals.authorization_server else None,
            "notes": list(signals.notes),
        },
        "findings": [
            {
                "code": finding.code,
                "rule": finding.rule,
                "severity": finding.severity.label,
                "message": finding.message,
                "hint": finding.hint,
                "details": dict(finding.details),
            }
            for finding in diagnosis.findings
        ],
        "exit_code": diagnosis.exit_code,
    }


def render_json(diagnoses: Sequence[Diagnosis]) -> str:
    return json.dumps([diagnosis_json(d) for d in diagnoses], indent=2, ensure_ascii=False) + "\n"


def _signals_line(diagnosis: Diagnosis) -> list[str]:
    signals = diagnosis.signals
    status = f"HTTP {signals.status}" if signals.status is not None else "no answer"
    if signals.challenge:
        params = signals.challenge.get("params") or {}
        shown = ", ".join(f"{key}={value}" for key, value in params.items())
        challenge = f"{signals.challenge.get('scheme') or '?'} {shown}".strip()
    else:
        challenge = "none"
    lines = [f"  anonymous answer: {status}; WWW-Authenticate: {clean_text(challenge, limit=300)}"]
    if signals.resource_metadata is not None:
        servers = signals.resource_metadata.get("authorization_servers")
        scopes = signals.resource_metadata.get("scopes_supported")
        lines.append(
            f"  protected-resource metadata: {clean_text(signals.resource_metadata_url, limit=200)}"
            f" (authorization_servers: {clean_text(json.dumps(servers), limit=200)};"
            f" scopes_supported: {clean_text(json.dumps(scopes), limit=200)})"
        )
    else:
        lines.append("  protected-resource metadata: none found at the well-known URL")
    if signals.authorization_server is not None:
        lines.append(f"  authorization server metadata: {clean_text(signals.authorization_server_url, limit=200)}")
    return lines


def render_text(diagnoses: Sequence[Diagnosis], *, width: int | None = None) -> str:
    """The diagnoses as text; with ``width`` ($COLUMNS or the terminal's), each line wrapped to it under its own
    text (a lane's columns, a label's value)."""
    lines = _text_lines(diagnoses)
    if width is None:
        return "\n".join(lines)
    return "\n".join(wrapped for line in lines for wrapped in _wrapped(line, width))


def _wrapped(line: str, width: int) -> list[str]:
    """``line`` within ``width``: its continuation lines indented two more than the line's own indent."""
    import textwrap

    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False) or [line]


def _text_lines(diagnoses: Sequence[Diagnosis]) -> list[str]:
    out: list[str] = []
    for diagnosis in diagnoses:
        head = clean_text(diagnosis.server, limit=120)
        if diagnosis.url != diagnosis.server:
            head += f" · {clean_text(diagnosis.url, limit=200)}"
        out.append(head)
        out.append(f"  verdict: {_VERDICTS.get(diagnosis.verdict, diagnosis.verdict)}")
        if diagnosis.lanes:
            width = max(len(lane.label) for lane in diagnosis.lanes)
            for lane in diagnosis.lanes:
                count = f"{len(lane.tools)} tools" if lane.outcome.ok else clean_text(lane.outcome.detail, limit=80)
                line = f"  {lane.label.ljust(width)}  {lane.outcome.outcome.value:<14} {count}"
                if lane.only_here:
                    names = ", ".join(clean_text(name, limit=64) for name in lane.only_here[:8])
                    more = f", … ({len(lane.only_here)} in all)" if len(lane.only_here) > 8 else ""
                    line += f"  only in this lane: {names}{more}"
                out.append(line)
            out.extend(_signals_line(diagnosis))
        out.append(f"  diagnosis: {clean_text(diagnosis.explanation, limit=1000)}")
        for finding in diagnosis.findings:
            out.append(f"  {finding.code} {finding.rule} ({finding.severity.label}): {clean_text(finding.message)}")
            out.append(f"    fix: {finding.hint}")
        out.append("")
    return out
