"""What changed on a server between two successful scans: tool events and the over-time findings (MCP5xx).

Pure functions over raw tool lists, no SQL: the store hands in the previous successful scan's tools and server
version and the current ones, and writes what comes back. Tools are matched by name (the n-th tool of a
repeated name matches the n-th of the same name); items that are not objects with a string name are matched by
their whole content, so a hostile list can only produce added/removed noise, never a crash.

- ``tool_added`` / ``tool_removed`` / ``tool_changed`` (details say which fields changed).
- MCP501 tool-changed-silently: a tool's description or inputSchema changed while ``serverInfo.version`` stayed
  the same (a "rug pull"); MCP502 tool-removed: a tool of the previous scan is gone.
- ``finding_appeared`` / ``finding_resolved`` per (code, tool), so when a finding first appeared and when it went
  away is a query, not a recompute.
- ``instructions_changed`` when the server's ``instructions`` text differs; MCP503
  instructions-changed-silently when it did so under the same ``serverInfo.version``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scanner.models import Finding, canonical_json
from scanner.rules import make_finding

TOOL_ADDED = "tool_added"
TOOL_REMOVED = "tool_removed"
TOOL_CHANGED = "tool_changed"
FINDING_APPEARED = "finding_appeared"
FINDING_RESOLVED = "finding_resolved"
SERVER_VERSION_CHANGED = "server_version_changed"
OUTCOME_CHANGED = "outcome_changed"
INSTRUCTIONS_CHANGED = "instructions_changed"
EVENT_KINDS: tuple[str, ...] = (
    TOOL_ADDED,
    TOOL_REMOVED,
    TOOL_CHANGED,
    FINDING_APPEARED,
    FINDING_RESOLVED,
    SERVER_VERSION_CHANGED,
    OUTCOME_CHANGED,
    INSTRUCTIONS_CHANGED,
)

# The fields whose change makes MCP501 fire: what a model reads to decide and to fill arguments.
WATCHED_FIELDS: tuple[str, ...] = ("description", "inputSchema")
MAX_LABEL = 200  # a tool label longer than this is cut: names come from servers and are not trusted


@dataclass(frozen=True)
class ChangeEvent:
    """One change between two scans of a server; ``details`` is small, JSON-ready and secret-free."""

    kind: str
    tool: str | None = None
    code: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolChanges:
    """Tools added, removed and changed, by label; ``changed`` maps a label to the fields that differ."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class _Tool:
    label: str
    index: int
    value: Any


def _label(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name")
        if isinstance(name, str):
            return name[:MAX_LABEL]
        return ("<name " + canonical_json(name) + ">")[:MAX_LABEL]
    return ("<" + canonical_json(tool) + ">")[:MAX_LABEL]


def _index(tools: Sequence[Any]) -> dict[str, _Tool]:
    """Tools keyed by label; repeats of a label get ``#2``, ``#3``... in list order."""
    keyed: dict[str, _Tool] = {}
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        base = _label(tool)
        count = seen.get(base, 0) + 1
        seen[base] = count
        label = base if count == 1 else f"{base}#{count}"
        keyed[label] = _Tool(label=label, index=index, value=tool)
    return keyed


def _changed_fields(before: Any, after: Any) -> tuple[str, ...]:
    if not isinstance(before, dict) or not isinstance(after, dict):
        return () if canonical_json(before) == canonical_json(after) else ("tool",)
    keys = sorted(set(before) | set(after), key=str)
    changed = [
        str(key)
        for key in keys
        if key not in before or key not in after or canonical_json(before[key]) != canonical_json(after[key])
    ]
    # The watched fields first, so details and messages lead with what matters.
    return tuple(sorted(changed, key=lambda name: (name not in WATCHED_FIELDS, name)))


def diff_tools(previous: Sequence[Any], current: Sequence[Any]) -> ToolChanges:
    """Which tools were added, removed or changed (and in which top-level fields) from ``previous`` to ``current``."""
    before, after = _index(previous), _index(current)
    added = tuple(label for label in after if label not in before)
    removed = tuple(label for label in before if label not in after)
    changed = []
    for label, tool in after.items():
        old = before.get(label)
        if old is None:
            continue
        fields = _changed_fields(old.value, tool.value)
        if fields:
            changed.append((label, fields))
    return ToolChanges(added=added, removed=removed, changed=tuple(changed))


def _version_text(version: str | None) -> str:
    return "no version" if version is None else f"version {version}"


def compare_tools(
    previous_tools: Sequence[Any],
    previous_version: str | None,
    current_tools: Sequence[Any],
    current_version: str | None,
) -> tuple[list[ChangeEvent], list[Finding]]:
    """Tool events and MCP501/MCP502 findings between the previous successful scan and the current one.

    MCP501 fires only when the reported version is unchanged (two scans without any version count as
    unchanged: nothing told a client to look again).
    """
    changes = diff_tools(previous_tools, current_tools)
    before, after = _index(previous_tools), _index(current_tools)
    events: list[ChangeEvent] = []
    findings: list[Finding] = []
    same_version = previous_version == current_version

    for label in changes.added:
        events.append(ChangeEvent(TOOL_ADDED, tool=label, details={"index": after[label].index}))
    for label in changes.removed:
        old_index = before[label].index
        events.append(ChangeEvent(TOOL_REMOVED, tool=label, details={"previous_index": old_index}))
        findings.append(
            make_finding(
                "MCP502",
                tool=label,
                message=f"Tool {label!r} was offered in the previous scan and is gone "
                f"({_version_text(previous_version)} → {_version_text(current_version)}).",
                details={
                    "previous_index": old_index,
                    "previous_version": previous_version,
                    "version": current_version,
                },
            )
        )
    for label, fields in changes.changed:
        index = after[label].index
        watched = [name for name in fields if name in WATCHED_FIELDS or name == "tool"]
        events.append(
            ChangeEvent(
                TOOL_CHANGED,
                tool=label,
                details={
                    "fields": list(fields),
                    "description_changed": "description" in fields,
                    "input_schema_changed": "inputSchema" in fields,
                    "index": index,
                },
            )
        )
        if watched and same_version:
            what = " and ".join(watched)
            findings.append(
                make_finding(
                    "MCP501",
                    tool=label,
                    message=f"Tool {label!r} changed its {what} while the server still reports "
                    f"{_version_text(current_version)}.",
                    pointer="/" + watched[0] if len(watched) == 1 and watched[0] != "tool" else None,
                    details={"changed": watched, "version": current_version},
                    tool_index=index,
                )
            )
    return events, findings


def finding_key(finding: Finding) -> tuple[str, str | None]:
    """What identifies a finding across scans: its code and tool (list rules: tool None or the first tool)."""
    return (finding.code, finding.tool)


def compare_findings(previous: Iterable[Finding], current: Iterable[Finding]) -> list[ChangeEvent]:
    """``finding_appeared`` / ``finding_resolved`` events per (code, tool) between two scans' findings."""
    before: dict[tuple[str, str | None], Finding] = {}
    for finding in previous:
        before.setdefault(finding_key(finding), finding)
    after: dict[tuple[str, str | None], Finding] = {}
    for finding in current:
        after.setdefault(finding_key(finding), finding)
    events = []
    for key, finding in after.items():
        if key not in before:
            events.append(
                ChangeEvent(
                    FINDING_APPEARED,
                    tool=finding.tool,
                    code=finding.code,
                    details={
                        "rule": finding.rule,
                        "severity": finding.severity.label,
                        "message": finding.message[:500],
                    },
                )
            )
    for key, finding in before.items():
        if key not in after:
            events.append(
                ChangeEvent(
                    FINDING_RESOLVED,
                    tool=finding.tool,
                    code=finding.code,
                    details={"rule": finding.rule, "severity": finding.severity.label},
                )
            )
    return events


def compare_versions(previous_version: str | None, current_version: str | None) -> list[ChangeEvent]:
    """A ``server_version_changed`` event when serverInfo.version differs between two successful scans."""
    if previous_version == current_version:
        return []
    return [
        ChangeEvent(
            SERVER_VERSION_CHANGED,
            details={"from": previous_version, "to": current_version},
        )
    ]


def compare_outcomes(previous_outcome: str | None, current_outcome: str) -> list[ChangeEvent]:
    """An ``outcome_changed`` event when a server's scan ended differently from its previous scan."""
    if previous_outcome is None or previous_outcome == current_outcome:
        return []
    return [ChangeEvent(OUTCOME_CHANGED, details={"from": previous_outcome, "to": current_outcome})]


def compare_instructions(
    previous_text: str, previous_version: str | None, current_text: str, current_version: str | None
) -> tuple[list[ChangeEvent], list[Finding]]:
    """An ``instructions_changed`` event when the instructions differ, and MCP503 when the version did not.

    The details say how much changed (lengths and hashes; the texts are stored once each, by hash).
    """
    if previous_text == current_text:
        return [], []
    import hashlib

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    details = {
        "from_sha256": digest(previous_text),
        "to_sha256": digest(current_text),
        "from_chars": len(previous_text),
        "to_chars": len(current_text),
        "version": current_version,
    }
    events = [ChangeEvent(INSTRUCTIONS_CHANGED, details=details)]
    if previous_version != current_version:
        return events, []
    finding = make_finding(
        "MCP503",
        tool=None,
        message=f"The server's instructions changed ({len(previous_text):,} → {len(current_text):,} characters) "
        f"while it still reports {_version_text(current_version)}.",
        pointer="instructions",
        details={**details, "field": "instructions"},
    )
    return events, [finding]
