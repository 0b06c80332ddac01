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

Stored events are one row per fact, which is what a query wants; :func:`readable_log` turns one server's events
into the change log a person reads (a first scan as one baseline row, findings grouped by rule, a finding that
left with its tool said so, a rename as one row). The report's server pages use it; ``fathom diff`` uses its
detection (:func:`renamed_tools`, :func:`pair_renames`, :func:`followed_findings`) on the two scans it compares.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from scanner.models import Finding, canonical_json
from scanner.rules import make_finding
from scanner.rules.vocabulary import name_words

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


def body_sha256(tool: Any) -> str | None:
    """The SHA-256 of what a tool says besides its name (its description and inputSchema), or None for an item that
    is not an object: two tools with the same body and different names are one tool renamed."""
    if not isinstance(tool, dict):
        return None
    body = {key: tool.get(key) for key in WATCHED_FIELDS}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def schema_sha256(tool: Any) -> str | None:
    """The SHA-256 of a tool's inputSchema alone, or None for an item that is not an object: among removed and
    added tools whose names fold to the same words, the same schema picks the pair (:func:`pair_renames`)."""
    if not isinstance(tool, dict):
        return None
    return hashlib.sha256(canonical_json(tool.get("inputSchema")).encode("utf-8")).hexdigest()


def _identity(tool: Any) -> dict[str, str | None]:
    """What a tool event stores to pair a rename later: its body's and its schema's hashes."""
    return {"body_sha256": body_sha256(tool), "schema_sha256": schema_sha256(tool)}


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
    """Tool events and MCP501/MCP502 findings between the previous successful scan and the current one (no MCP502
    for a tool renamed).

    MCP501 fires only when the reported version is unchanged (two scans without any version count as
    unchanged: nothing told a client to look again).
    """
    changes = diff_tools(previous_tools, current_tools)
    before, after = _index(previous_tools), _index(current_tools)
    # A tool renamed (:func:`renamed_tools`, as ``fathom diff`` and the change log pair them) is not a tool removed:
    # its events stay one removed and one added (the log pairs them again), but no MCP502.
    renamed = renamed_tools(previous_tools, current_tools, changes)
    events: list[ChangeEvent] = []
    findings: list[Finding] = []
    same_version = previous_version == current_version

    for label in changes.added:
        tool = after[label]
        events.append(ChangeEvent(TOOL_ADDED, tool=label, details={"index": tool.index, **_identity(tool.value)}))
    for label in changes.removed:
        old_index = before[label].index
        identity = _identity(before[label].value)
        events.append(ChangeEvent(TOOL_REMOVED, tool=label, details={"previous_index": old_index, **identity}))
        if label in renamed:
            continue
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


# --- The change log a person reads -------------------------------------------------------------------------------

BASELINE = "baseline"
TOOL_RENAMED = "tool_renamed"
FINDING_GONE_WITH_TOOL = "finding_gone_with_tool"
# Over-time findings hold for the one scan in which the change happened; their going away the scan after is not a
# fix, so the readable log leaves those finding_resolved rows out (the store keeps them).
ONE_SCAN_CODES = frozenset({"MCP501", "MCP502", "MCP503"})
LOG_KIND_LABELS: Mapping[str, str] = {
    BASELINE: "Baseline",
    OUTCOME_CHANGED: "Outcome changed",
    SERVER_VERSION_CHANGED: "Version changed",
    INSTRUCTIONS_CHANGED: "Instructions changed",
    TOOL_RENAMED: "Tools renamed",
    TOOL_ADDED: "Tools added",
    TOOL_REMOVED: "Tools removed",
    TOOL_CHANGED: "Tools changed",
    FINDING_APPEARED: "Finding appeared",
    FINDING_GONE_WITH_TOOL: "Gone with its tool",
    FINDING_RESOLVED: "Fixed",
}
_ORDER = {kind: index for index, kind in enumerate(LOG_KIND_LABELS)}
_SEVERITY_ORDER = {"problem": 0, "warning": 1, "note": 2}
THE_LIST = "(the list)"  # a list-wide finding names no tool


class StoredEvent(Protocol):
    """What :func:`readable_log` reads of a stored event (``scanner.store.rows.EventRow`` has all of it)."""

    @property
    def run_id(self) -> int: ...

    @property
    def at(self) -> datetime: ...

    @property
    def kind(self) -> str: ...

    @property
    def tool(self) -> str | None: ...

    @property
    def code(self) -> str | None: ...

    @property
    def details(self) -> Mapping[str, object]: ...


@dataclass(frozen=True)
class LogEntry:
    """One row of the readable change log: one kind of change in one run, for one rule where it is a finding.

    ``items`` are the tools it concerns (``old → new`` for a rename; :data:`THE_LIST` for a list-wide finding),
    ``summary`` one plain line, ``severity`` the finding's severity label ("" for other kinds).
    """

    run_id: int
    at: datetime | None
    kind: str
    summary: str
    code: str | None = None
    items: tuple[str, ...] = ()
    severity: str = ""

    @property
    def label(self) -> str:
        """The kind in words ("Tools renamed", "Gone with its tool")."""
        return LOG_KIND_LABELS.get(self.kind, self.kind)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def number_text(value: object) -> str:
    """A stored count with thousands separators (``22,884``); anything else as it is."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _default_baseline(by_run: Mapping[int, Sequence[StoredEvent]]) -> int | None:
    """The first run, when it holds only what a first successful scan records (findings, an outcome change)."""
    if not by_run:
        return None
    first = min(by_run)
    kinds = {event.kind for event in by_run[first]}
    return first if kinds and kinds <= {FINDING_APPEARED, OUTCOME_CHANGED} else None


def readable_log(events: Iterable[StoredEvent], *, baseline_run: int | None = None) -> tuple[LogEntry, ...]:
    """One server's stored events as the change log a person reads, newest run first.

    - The run of ``baseline_run`` (the server's first successful scan; by default the first run, when it holds
      only findings and an outcome change) is one ``baseline`` row counting its findings, not one row per finding.
    - A ``tool_removed`` and a ``tool_added`` of one run with the same description and inputSchema (the
      ``body_sha256`` of their details) are one ``tool_renamed`` item ``old → new``; its MCP502 and the findings
      that followed it to its new name are not repeated. Events stored before ``body_sha256`` existed are not
      paired.
    - Findings are grouped per run by rule and kind (appeared, fixed), worst first; a finding whose tool was
      removed in that run is ``finding_gone_with_tool``, not fixed. MCP501-503 going away the scan after they
      fired is left out (they hold for one scan).
    """
    by_run: dict[int, list[StoredEvent]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)
    if baseline_run is None:
        baseline_run = _default_baseline(by_run)
    entries: list[LogEntry] = []
    for run_id in sorted(by_run, reverse=True):
        entries.extend(_run_entries(run_id, by_run[run_id], baseline=run_id == baseline_run))
    return tuple(entries)


def _run_entries(run_id: int, events: Sequence[StoredEvent], *, baseline: bool) -> list[LogEntry]:
    at = min((event.at for event in events), default=None)
    if baseline:
        return _baseline_entries(run_id, at, events)
    added = [event for event in events if event.kind == TOOL_ADDED and event.tool is not None]
    removed = [event for event in events if event.kind == TOOL_REMOVED and event.tool is not None]
    renamed = _pair_renames(removed, added)
    new_names = set(renamed.values())
    removed_names = {str(event.tool) for event in removed}
    # A finding that followed a renamed tool: resolved on the old name, appeared with the same code on the new.
    followed = followed_findings(
        renamed,
        ((event.code, event.tool) for event in events if event.kind == FINDING_APPEARED),
        ((event.code, event.tool) for event in events if event.kind == FINDING_RESOLVED),
    )
    entries: list[LogEntry] = []
    groups: dict[tuple[str, str | None, tuple[str, ...]], list[StoredEvent]] = {}
    mcp502 = {str(event.tool) for event in events if event.kind == FINDING_APPEARED and event.code == "MCP502"}
    for event in events:
        kind, code, tool = event.kind, event.code, event.tool
        if kind in (OUTCOME_CHANGED, SERVER_VERSION_CHANGED, INSTRUCTIONS_CHANGED):
            entries.append(LogEntry(run_id, at, kind, _single_summary(event)))
            continue
        if kind == TOOL_ADDED and tool in new_names:
            continue
        if kind == TOOL_REMOVED and tool in renamed:
            continue
        if kind == FINDING_APPEARED and code == "MCP502" and tool in removed_names:
            continue  # said by the tools-removed or renamed row
        if kind == FINDING_APPEARED and (code, tool) in followed:
            continue
        if kind == FINDING_RESOLVED:
            if code in ONE_SCAN_CODES:
                continue
            if tool in renamed and (code, renamed[str(tool)]) in followed:
                continue
            if tool in removed_names and tool not in renamed:
                kind = FINDING_GONE_WITH_TOOL  # a renamed tool's finding its new name lacks was fixed (as in diff)
        fields: tuple[str, ...] = ()
        if kind == TOOL_CHANGED:
            listed = event.details.get("fields")
            fields = tuple(str(name) for name in listed) if isinstance(listed, list) else ()
        groups.setdefault((kind, code if kind not in _TOOL_KINDS else None, fields), []).append(event)
    if renamed:
        bodies = {str(event.tool): event.details.get("body_sha256") for event in (*removed, *added)}
        pairs = tuple(
            f"{old} → {new}" + ("" if bodies.get(old) == bodies.get(new) else " (changed too)")
            for old, new in renamed.items()
        )
        same = all(not pair.endswith(")") for pair in pairs)
        summary = f"{len(pairs)} renamed" + (", same description and schema" if same else "")
        entries.append(LogEntry(run_id, at, TOOL_RENAMED, summary, items=pairs))
    for (kind, code, fields), members in groups.items():
        entries.append(_group_entry(run_id, at, kind, code, fields, members, mcp502))
    entries.sort(
        key=lambda entry: (_ORDER.get(entry.kind, 99), _SEVERITY_ORDER.get(entry.severity, 3), entry.code or "")
    )
    return entries


_TOOL_KINDS = frozenset({TOOL_ADDED, TOOL_REMOVED, TOOL_CHANGED})


RenameKey = tuple[str, object] | tuple[str, object, object]
"""``(name, body_sha256)`` or ``(name, body_sha256, schema_sha256)`` of a removed or added tool."""


def pair_renames(removed: Iterable[RenameKey], added: Iterable[RenameKey]) -> dict[str, str]:
    """Old name -> new name for removed and added tools that are one tool renamed, paired in order.

    First the same body (the same description and inputSchema) under any name; then, among those left, names
    that fold to the same words (``convert.units`` / ``convert_units``, ``get-tiny-image`` / ``getTinyImage``),
    whatever else changed with the name, preferring the candidate with the same inputSchema. A body hash that is
    not a string (an item that is not an object, an event stored before the hash existed) pairs by body with
    nothing."""
    gone, new = list(removed), list(added)
    pairs: dict[str, str] = {}
    waiting: dict[str, list[str]] = {}
    for name, body, *_ in new:
        if isinstance(body, str):
            waiting.setdefault(body, []).append(name)
    for name, body, *_ in gone:
        if isinstance(body, str) and waiting.get(body):
            pairs[name] = waiting[body].pop(0)
    taken = set(pairs.values())
    by_words: dict[tuple[str, ...], list[tuple[str, object]]] = {}
    for name, _, *schema in new:
        words = tuple(name_words(name))
        if name not in taken and words:
            by_words.setdefault(words, []).append((name, schema[0] if schema else None))
    for name, _, *schema in gone:
        candidates = by_words.get(tuple(name_words(name))) if name not in pairs else None
        if not candidates:
            continue
        own = schema[0] if schema else None
        chosen = next((c for c in candidates if isinstance(own, str) and c[1] == own), candidates[0])
        candidates.remove(chosen)
        pairs[name] = chosen[0]
    return pairs


def renamed_tools(previous: Sequence[Any], current: Sequence[Any], changes: ToolChanges) -> dict[str, str]:
    """Old label -> new label for the tools of ``changes`` (:func:`diff_tools` of the two lists) removed from
    ``previous`` and added to ``current`` that are one tool renamed (:func:`pair_renames`), not one removed and
    one added."""
    before, after = _index(previous), _index(current)
    return pair_renames(
        ((label, body_sha256(before[label].value), schema_sha256(before[label].value)) for label in changes.removed),
        ((label, body_sha256(after[label].value), schema_sha256(after[label].value)) for label in changes.added),
    )


def renamed_fields(
    previous: Sequence[Any], current: Sequence[Any], renamed: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """New label -> the fields besides the name that changed with the rename (empty when only the name did)."""
    before, after = _index(previous), _index(current)
    return {
        new: tuple(name for name in _changed_fields(before[old].value, after[new].value) if name != "name")
        for old, new in renamed.items()
    }


def followed_findings(
    renamed: Mapping[str, str],
    appeared: Iterable[tuple[str | None, str | None]],
    resolved: Iterable[tuple[str | None, str | None]],
) -> set[tuple[str | None, str | None]]:
    """The ``(code, new name)`` of findings that followed a renamed tool: gone from its old name and present with
    the same code on its new one, so neither fixed nor new."""
    moved = {(code, renamed[tool]) for code, tool in resolved if tool is not None and tool in renamed}
    return {(code, tool) for code, tool in appeared if (code, tool) in moved}


def _pair_renames(removed: Sequence[StoredEvent], added: Sequence[StoredEvent]) -> dict[str, str]:
    """Old name -> new name for removed and added tools of one run with the same body, paired in order."""
    return pair_renames(
        ((str(event.tool), event.details.get("body_sha256"), event.details.get("schema_sha256")) for event in removed),
        ((str(event.tool), event.details.get("body_sha256"), event.details.get("schema_sha256")) for event in added),
    )


def _single_summary(event: StoredEvent) -> str:
    details = event.details
    if event.kind in (SERVER_VERSION_CHANGED, OUTCOME_CHANGED) and {"from", "to"} <= set(details):
        return f"{details['from']} → {details['to']}"
    if event.kind == INSTRUCTIONS_CHANGED and {"from_chars", "to_chars"} <= set(details):
        return f"{number_text(details['from_chars'])} → {number_text(details['to_chars'])} characters"
    return ""


def _group_entry(
    run_id: int,
    at: datetime | None,
    kind: str,
    code: str | None,
    fields: tuple[str, ...],
    members: Sequence[StoredEvent],
    mcp502: set[str],
) -> LogEntry:
    items = tuple(THE_LIST if event.tool is None else str(event.tool) for event in members)
    count = len(items)
    if kind == TOOL_ADDED:
        return LogEntry(run_id, at, kind, f"{count} added", items=items)
    if kind == TOOL_REMOVED:
        flagged = " (MCP502 tool-removed)" if any(item in mcp502 for item in items) else ""
        return LogEntry(run_id, at, kind, f"{count} removed{flagged}", items=items)
    if kind == TOOL_CHANGED:
        return LogEntry(run_id, at, kind, f"{count} changed: " + ", ".join(fields), items=items)
    first = members[0].details
    severity = str(first.get("severity") or "")
    rule = str(first.get("rule") or "")
    message = first.get("message")
    where = "the list" if items == (THE_LIST,) else ("1 tool" if count == 1 else f"{count} tools")
    if kind == FINDING_APPEARED:
        text = f"{rule} on {where}" + (f": {message}" if isinstance(message, str) and count == 1 else "")
    elif kind == FINDING_GONE_WITH_TOOL:
        text = (
            f"{rule}: its tool was removed, so it went with it (not fixed)"
            if count == 1
            else f"{rule} on {where}: they were removed, so it went with them (not fixed)"
        )
    else:
        text = f"{rule} fixed on {where}"
    return LogEntry(run_id, at, kind, text.strip(), code=code, items=items, severity=severity)


def _baseline_entries(run_id: int, at: datetime | None, events: Sequence[StoredEvent]) -> list[LogEntry]:
    entries = [
        LogEntry(run_id, at, event.kind, _single_summary(event)) for event in events if event.kind == OUTCOME_CHANGED
    ]
    found = [event for event in events if event.kind == FINDING_APPEARED]
    counts = {label: 0 for label in _SEVERITY_ORDER}
    for event in found:
        label = str(event.details.get("severity") or "")
        if label in counts:
            counts[label] += 1
    rules = sorted({str(event.code) for event in found if event.code})
    parts = ", ".join(f"{number} {label}{'' if number == 1 else 's'}" for label, number in counts.items() if number)
    summary = "First successful scan: "
    if found:
        summary += f"{_count(len(found), 'finding')} ({parts}) under {_count(len(rules), 'rule')}"
    else:
        summary += "no findings"
    entries.insert(0, LogEntry(run_id, at, BASELINE, summary, items=tuple(rules)))
    return entries
