"""History as pure functions: tool events, MCP501/MCP502, finding and version/outcome changes between two scans."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scanner.measure import history
from scanner.models import Finding, Severity


def _tool(name: Any, description: str = "Does one thing well.", **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}, **extra}


def test_added_removed_changed_by_name_not_position() -> None:
    before = [_tool("a"), _tool("b"), _tool("c")]
    after = [_tool("c"), _tool("a", "Does two things now."), _tool("d")]
    changes = history.diff_tools(before, after)
    assert changes.added == ("d",)
    assert changes.removed == ("b",)
    assert changes.changed == (("a", ("description",)),)  # c only moved: not a change


def test_changed_fields_lead_with_what_a_model_reads() -> None:
    before = [_tool("a", title="A")]
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    after = [{**_tool("a", "New text.", title="B"), "inputSchema": schema, "annotations": {"readOnlyHint": True}}]
    ((name, fields),) = history.diff_tools(before, after).changed
    assert name == "a" and fields == ("description", "inputSchema", "annotations", "title")


def test_mcp501_only_when_the_version_stayed_the_same() -> None:
    before = [_tool("a"), _tool("b")]
    after = [_tool("a", "Now also deletes files."), _tool("b", title="cosmetic")]
    events, findings = history.compare_tools(before, "1.0", after, "1.0")
    assert [(f.code, f.tool, f.severity, f.pointer) for f in findings] == [
        ("MCP501", "a", Severity.WARNING, "/description")
    ]
    assert findings[0].rule == "tool-changed-silently" and findings[0].tool_index == 0
    assert "1.0" in findings[0].message and findings[0].hint
    changed = {e.tool: dict(e.details) for e in events if e.kind == history.TOOL_CHANGED}
    assert changed["a"]["description_changed"] and not changed["a"]["input_schema_changed"]
    assert changed["b"]["fields"] == ["title"]  # a change, but not a silent rug pull

    _, bumped = history.compare_tools(before, "1.0", after, "1.1")
    assert bumped == []
    _, unversioned = history.compare_tools(before, None, after, None)
    assert [f.code for f in unversioned] == ["MCP501"]


def test_mcp502_for_every_removed_tool_whatever_the_version() -> None:
    events, findings = history.compare_tools([_tool("a"), _tool("b")], "1", [_tool("a")], "2")
    assert [(e.kind, e.tool) for e in events] == [(history.TOOL_REMOVED, "b")]
    assert [(f.code, f.rule, f.severity, f.tool) for f in findings] == [("MCP502", "tool-removed", Severity.NOTE, "b")]


def test_hostile_lists_do_not_crash() -> None:
    before: list[Any] = [1, "x", None, {"name": ["a"]}, _tool("dup"), _tool("dup", "second")]
    after: list[Any] = [{"name": ["a"], "description": 5}, _tool("dup", "second"), [1, 2]]
    changes = history.diff_tools(before, after)
    assert "<1>" in changes.removed and "<null>" in changes.removed
    assert "dup#2" in changes.removed  # the second "dup" is gone; the first now reads "second"
    assert dict(changes.changed)["dup"] == ("description",)
    assert dict(changes.changed)['<name ["a"]>'] == ("description",)
    assert changes.added == ("<[1,2]>",)
    long_name = history.diff_tools([], [_tool("n" * 10_000)]).added[0]
    assert len(long_name) == history.MAX_LABEL


def _finding(code: str, tool: str | None, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(code, code.lower(), severity, tool, f"{code} on {tool}", "hint")


def test_findings_appear_and_resolve_per_code_and_tool() -> None:
    before = [_finding("MCP205", "a"), _finding("MCP207", "a"), _finding("MCP305", None)]
    after = [_finding("MCP205", "a"), _finding("MCP207", "b"), _finding("MCP305", None)]
    events = history.compare_findings(before, after)
    assert [(e.kind, e.code, e.tool) for e in events] == [
        (history.FINDING_APPEARED, "MCP207", "b"),
        (history.FINDING_RESOLVED, "MCP207", "a"),
    ]
    assert events[0].details["severity"] == "warning" and events[0].details["message"] == "MCP207 on b"


def test_version_and_outcome_changes() -> None:
    assert history.compare_versions("1", "1") == []
    assert [dict(e.details) for e in history.compare_versions("1", None)] == [{"from": "1", "to": None}]
    assert history.compare_outcomes(None, "ok") == []  # a first scan is not a change
    assert history.compare_outcomes("ok", "ok") == []
    assert [(e.kind, dict(e.details)) for e in history.compare_outcomes("ok", "timeout")] == [
        (history.OUTCOME_CHANGED, {"from": "ok", "to": "timeout"})
    ]


# --- readable_log: the change log a person reads ------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    run_id: int
    kind: str
    tool: str | None = None
    code: str | None = None
    details: Mapping[str, object] = field(default_factory=dict)
    at: datetime = datetime(2026, 3, 1, tzinfo=UTC)


def _stored(run_id: int, events: list[history.ChangeEvent]) -> list[_Event]:
    return [_Event(run_id, e.kind, e.tool, e.code, dict(e.details)) for e in events]


def test_a_rename_is_one_row_and_its_mcp502_is_not_repeated() -> None:
    before = [_tool("get-tiny-image", "Return a tiny image."), _tool("echo", "Echo the text."), _tool("gone")]
    after = [_tool("getTinyImage", "Return a tiny image."), _tool("echo", "Echo the text.")]
    events, findings = history.compare_tools(before, "1", after, "1")
    appeared = history.compare_findings([], findings)  # the MCP502s of this scan
    log = history.readable_log(_stored(2, events + appeared), baseline_run=1)
    kinds = [(entry.kind, entry.items) for entry in log]
    assert (history.TOOL_RENAMED, ("get-tiny-image → getTinyImage",)) in kinds
    assert (history.TOOL_REMOVED, ("gone",)) in kinds
    assert not any(entry.kind == history.TOOL_ADDED for entry in log)
    assert not any(entry.code == "MCP502" for entry in log)  # said by the removed row
    removed = next(entry for entry in log if entry.kind == history.TOOL_REMOVED)
    assert removed.summary == "1 removed (MCP502 tool-removed)"


def test_a_new_name_with_other_words_and_a_changed_description_is_not_a_rename() -> None:
    events, _ = history.compare_tools([_tool("a", "One.")], "1", [_tool("b", "Two.")], "1")
    log = history.readable_log(_stored(2, events), baseline_run=1)
    assert {entry.kind for entry in log} == {history.TOOL_ADDED, history.TOOL_REMOVED}


def _units(name: str, description: str, *properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {key: {"type": "string"} for key in properties}}
    return {"name": name, "description": description, "inputSchema": schema}


def test_a_rename_whose_name_folds_to_the_same_words_is_one_row_whatever_changed_with_it() -> None:
    """Issue 37: the demo's ``convert.units`` -> ``convert_units`` (a new description, and the schema fixed) showed
    as added + removed + MCP502, though the README says a rename is one row."""
    before = [_units("convert.units", "Convert a value between units.", "value"), _tool("gone")]
    after = [_units("convert_units", "Convert a value between units of length, e.g. 3 ft to m.", "value", "from")]
    events, findings = history.compare_tools(before, "1.0.0", after, "1.1.0")
    appeared = history.compare_findings([], findings)

    log = history.readable_log(_stored(2, events + appeared), baseline_run=1)

    renamed = [entry for entry in log if entry.kind == history.TOOL_RENAMED]
    assert [entry.items for entry in renamed] == [("convert.units → convert_units (changed too)",)]
    assert renamed[0].summary == "1 renamed"
    assert not any(entry.kind == history.TOOL_ADDED for entry in log)
    assert [entry.items for entry in log if entry.kind == history.TOOL_REMOVED] == [("gone",)]
    changes = history.diff_tools(before, after)
    assert history.renamed_tools(before, after, changes) == {"convert.units": "convert_units"}
    fields = history.renamed_fields(before, after, {"convert.units": "convert_units"})
    assert fields == {"convert_units": ("description", "inputSchema")}


def test_a_rename_tells_one_story_no_mcp502_and_the_old_names_findings_fixed() -> None:
    """Issue 46: ``diff`` said renamed and MCP101 fixed, while the change log said "left with its tool ... removed,
    not fixed" and the stored findings (so ``findings`` and ``check --db``) held MCP502 tool-removed for the old
    name. A rename is not a removal: no MCP502; a finding the new name no longer has was fixed."""
    before = [_units("convert.units", "Convert a value between units.", "value"), _tool("gone")]
    after = [_units("convert_units", "Convert a value between units of length, e.g. 3 ft to m.", "value", "from")]
    events, findings = history.compare_tools(before, "1.0.0", after, "1.1.0")
    assert [(f.code, f.tool) for f in findings] == [("MCP502", "gone")]  # the real removal only

    name_invalid = Finding(
        code="MCP101", rule="name-invalid", severity=Severity.PROBLEM, tool="convert.units", message="bad name", hint=""
    )
    resolved = history.compare_findings([name_invalid], findings)
    log = history.readable_log(_stored(2, events + resolved), baseline_run=1)

    assert not any(entry.kind == history.FINDING_GONE_WITH_TOOL for entry in log), log
    fixed = [entry for entry in log if entry.kind == history.FINDING_RESOLVED]
    assert [(entry.code, entry.items, entry.summary) for entry in fixed] == [
        ("MCP101", ("convert.units",), "name-invalid fixed on 1 tool")
    ]


def test_among_names_with_the_same_words_the_same_schema_is_the_pair() -> None:
    before = [_units("get_item", "Old text.", "id"), _units("get.item", "Old text two.", "key")]
    after = [_units("getItem", "New text.", "key"), _units("get-item", "New text two.", "id")]

    changes = history.diff_tools(before, after)

    assert history.renamed_tools(before, after, changes) == {"get_item": "get-item", "get.item": "getItem"}


def test_events_stored_before_the_schema_hash_still_pair_by_words() -> None:
    """Events written by an older Fathom carry only ``body_sha256``: a rename by words still pairs them."""
    events = [
        _Event(2, history.TOOL_REMOVED, "convert.units", details={"previous_index": 0, "body_sha256": "a"}),
        _Event(2, history.TOOL_ADDED, "convert_units", details={"index": 0, "body_sha256": "b"}),
    ]

    log = history.readable_log(events, baseline_run=1)

    assert [(entry.kind, entry.items) for entry in log] == [
        (history.TOOL_RENAMED, ("convert.units → convert_units (changed too)",))
    ]


def test_findings_group_by_rule_and_leave_with_their_tool() -> None:
    def appeared(code: str, tool: str | None, severity: str = "warning") -> _Event:
        return _Event(3, history.FINDING_APPEARED, tool, code, {"rule": "r-" + code, "severity": severity})

    events = [
        _Event(3, history.TOOL_REMOVED, "old", details={"previous_index": 0}),
        _Event(3, history.FINDING_RESOLVED, "old", "MCP102", {"rule": "description-missing", "severity": "problem"}),
        _Event(3, history.FINDING_RESOLVED, "kept", "MCP205", {"rule": "param-untyped", "severity": "warning"}),
        _Event(3, history.FINDING_RESOLVED, "kept", "MCP501", {"rule": "tool-changed-silently", "severity": "problem"}),
        appeared("MCP207", "a"),
        appeared("MCP207", "b"),
        appeared("MCP207", "c"),
        appeared("MCP102", "d", "problem"),
        appeared("MCP305", None),
    ]
    log = history.readable_log(events, baseline_run=1)
    rows = [(entry.kind, entry.code, entry.items) for entry in log]
    assert (history.FINDING_APPEARED, "MCP207", ("a", "b", "c")) in rows  # one row for the rule, not three
    assert (history.FINDING_GONE_WITH_TOOL, "MCP102", ("old",)) in rows  # not "fixed"
    assert (history.FINDING_RESOLVED, "MCP205", ("kept",)) in rows
    assert not any(code == "MCP501" for _, code, _ in rows)  # a one-scan finding going away is not a fix
    assert (history.FINDING_APPEARED, "MCP305", (history.THE_LIST,)) in rows
    appeared_rows = [entry for entry in log if entry.kind == history.FINDING_APPEARED]
    assert appeared_rows[0].severity == "problem"  # worst first within a kind
    assert [entry.label for entry in log][:1] == ["Tools removed"]


def test_the_first_scan_is_one_baseline_row() -> None:
    first = [
        _Event(1, history.FINDING_APPEARED, f"t{index}", "MCP207", {"severity": "note", "rule": "x"})
        for index in range(170)
    ]
    first.append(_Event(1, history.FINDING_APPEARED, "t0", "MCP102", {"severity": "problem", "rule": "y"}))
    later = [_Event(2, history.SERVER_VERSION_CHANGED, details={"from": "1", "to": "2"})]
    log = history.readable_log(first + later)  # the first run holds only findings: it is the baseline
    assert [entry.kind for entry in log] == [history.SERVER_VERSION_CHANGED, history.BASELINE]
    baseline = log[-1]
    assert baseline.summary == "First successful scan: 171 findings (1 problem, 170 notes) under 2 rules"
    assert baseline.items == ("MCP102", "MCP207")
    # Told which run was the first successful scan, a log that starts later has no baseline row.
    assert history.BASELINE not in {entry.kind for entry in history.readable_log(later, baseline_run=1)}


def test_instruction_sizes_read_with_separators() -> None:
    events, _ = history.compare_instructions("a" * 1_234, "1", "b" * 22_884, "1")
    (entry,) = history.readable_log(_stored(2, events), baseline_run=1)
    assert entry.summary == "1,234 → 22,884 characters"
