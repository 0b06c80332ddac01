"""History as pure functions: tool events, MCP501/MCP502, finding and version/outcome changes between two scans."""

from __future__ import annotations

from typing import Any

from scanner import history
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
