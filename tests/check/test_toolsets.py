"""The input edge of ``fathom check --tools-file``: accepted shapes, and one clear error for everything else."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from scanner.check.toolsets import extract_tools, load_tools
from scanner.errors import InputError

TOOL = {"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object", "properties": {}}}


@pytest.mark.parametrize(
    "document",
    [[TOOL], {"tools": [TOOL]}, {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL], "nextCursor": None}}],
    ids=["array", "tools-list-result", "jsonrpc-response"],
)
def test_accepted_shapes_give_the_same_tools(tmp_path: Path, document: object) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert load_tools(str(path)) == [TOOL]


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"name": "x"}, "object without a tool list"),
        ({"tools": {"a": 1}}, '"tools" is an object, not an array'),
        ({"result": {"tools": "x"}}, '"result.tools" is a string'),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}}, "JSON-RPC error response"),
        ("just text", "is a string"),
        (42, "is a number"),
    ],
)
def test_other_shapes_are_one_clear_error(document: object, fragment: str) -> None:
    with pytest.raises(InputError) as caught:
        extract_tools(document, "in.json")
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"tools": [\n  {"name": }\n]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"not valid JSON: .* line 2 column"):
        load_tools(str(path))


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_tools(str(tmp_path / "absent.json"))
    with pytest.raises(InputError, match="is a directory"):
        load_tools(str(tmp_path))


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: 100 MB on paper, nothing on disk
    started = time.monotonic()
    with pytest.raises(InputError, match=r"100\.0 MiB, larger than the 32 MiB limit"):
        load_tools(str(path))
    assert time.monotonic() - started < 30  # generous: a loaded machine is slow, not wrong


def test_nesting_10000_deep_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    schema = '{"type": "object", "properties": {"a": ' * 10_000 + "{}" + "}}" * 10_000
    path.write_text('[{"name": "deep", "inputSchema": ' + schema + "}]", encoding="utf-8")
    with pytest.raises(InputError, match="nests JSON deeper than can be read"):
        load_tools(str(path))


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"name": "caf\xe9"}]')
    with pytest.raises(InputError, match="not UTF-8"):
        load_tools(str(path))


def test_lone_surrogates_become_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.json"
    path.write_text('[{"name": "a\\ud800b", "description": "ok \\ud83d\\ude00", "inputSchema": {}}]', encoding="utf-8")
    tools = load_tools(str(path))
    assert tools[0]["name"] == "a\ufffdb"
    assert tools[0]["description"] == "ok \U0001f600"  # a proper pair is kept
