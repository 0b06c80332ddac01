"""Simple lists, client config files, saved responses, directories, stdin, and format detection."""

from __future__ import annotations

import io
import json

import pytest
from registry_support import FIXTURES, SAMPLE

from scanner.errors import InputError
from scanner.models import Transport
from scanner.registry import detect, load_entries

ENV = {"PATH": "/usr/bin", "LANG": "en_US.UTF-8", "FIXTURE_TOKEN": "tok-1", "NOTION_TOKEN": "nt-2", "HOME": "/root"}


def by_name(entries):
    return {entry.name: entry for entry in entries}


def test_claude_desktop_config():
    entries = by_name(load_entries(str(FIXTURES / "claude_desktop_config.json"), environ=ENV))
    assert list(entries) == ["filesystem", "linear", "notion", "broken", "weird"]
    fs = entries["filesystem"]
    assert fs.transport is Transport.STDIO
    assert fs.command == ("npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp")
    # exactly the file's env with ${env:...} filled (the spawner adds only the documented pass-through)
    assert fs.env == {"LOG_LEVEL": "debug", "API_TOKEN": "tok-1"}
    assert fs.skip == "command from a claude file: needs --run-commands (commands in input files run only then)"
    trusted = by_name(load_entries(str(FIXTURES / "claude_desktop_config.json"), environ=ENV, run_commands=True))
    assert trusted["filesystem"].skip is None
    assert (entries["linear"].transport, entries["linear"].url) == (Transport.SSE, "https://mcp.linear.app/sse")
    notion = entries["notion"]
    assert notion.transport is Transport.HTTP  # unknown yet: streamable HTTP first, then legacy SSE
    assert notion.headers == {"Authorization": "Bearer nt-2"}
    assert notion.anonymous is False
    assert entries["broken"].skip == "no usable url or command (a list of strings)"
    assert entries["weird"].skip == "server entry is not an object"


def test_claude_desktop_missing_env_reference_is_left_out():
    entries = by_name(load_entries(str(FIXTURES / "claude_desktop_config.json"), environ={"PATH": "/bin"}))
    assert "API_TOKEN" not in entries["filesystem"].env
    assert entries["notion"].headers == {}
    assert entries["notion"].anonymous is True
    assert entries["notion"].secret_header_names == ("Authorization",)


def test_vscode_mcp_json_with_comments():
    path = FIXTURES / "vscode_mcp.json"
    assert detect(json.loads('{"servers": {}}')) == "vscode"
    entries = by_name(load_entries(str(path), environ=ENV))
    github = entries["github"]
    assert (github.transport, github.url) == (Transport.HTTP, "https://api.githubcopilot.com/mcp/")
    assert github.headers == {"X-Client": "fathom"}  # ${input:gh-token} cannot be filled here
    assert github.secret_header_names == ("Authorization",)
    assert github.anonymous is True
    assert entries["legacy"].transport is Transport.SSE
    time = entries["time"]
    assert time.command == ("uvx", "mcp-server-time")
    assert time.env["TZ"] == "UTC"
    assert time.source == str(path)


def test_vscode_settings_json():
    entries = load_entries(str(FIXTURES / "vscode_settings.json"), environ=ENV)
    assert [(e.name, e.command) for e in entries] == [("memory", ("npx", "-y", "@modelcontextprotocol/server-memory"))]


def test_simple_list():
    entries = by_name(load_entries(str(FIXTURES / "simple_list.json"), environ=ENV))
    assert entries["docs"].headers == {"X-Api-Key": "k-123"}
    assert entries["docs"].transport is Transport.HTTP
    assert entries["everything"].command == ("npx", "-y", "@modelcontextprotocol/server-everything")
    assert entries["everything"].env["DEBUG"] == "1"
    assert entries["legacy"].transport is Transport.SSE
    assert entries["nothing"].skip is not None


def test_kinds_detected():
    assert detect(json.loads(SAMPLE.read_text(encoding="utf-8"))) == "registry"
    assert detect(json.loads((FIXTURES / "simple_list.json").read_text(encoding="utf-8"))) == "list"
    assert detect(json.loads((FIXTURES / "server_variables.json").read_text(encoding="utf-8"))) == "server-json"
    assert detect(json.loads((FIXTURES / "registry_snake_case.json").read_text(encoding="utf-8"))) == "registry"
    assert detect({"hello": "world"}) is None
    assert detect([1, 2]) is None


def test_kind_override(write_json):
    # a list file read as a registry response: the rows are flat server.json objects without remotes
    path = write_json("list.json", {"servers": [{"name": "a/b", "url": "https://x.example.com/mcp"}]})
    entries = load_entries(str(path), kind="registry", environ=ENV)
    assert entries[0].skip == "no remote and no package to run"
    with pytest.raises(InputError, match="unknown --kind"):
        load_entries(str(path), kind="yaml", environ=ENV)


def test_saved_snake_case_response():
    entries = by_name(load_entries(str(FIXTURES / "registry_snake_case.json"), environ=ENV))
    # the old version dropped; the deleted one recorded as such (outcome delisted, never connected to)
    assert list(entries) == ["io.github.old/remote", "io.github.old/package", "io.github.old/gone"]
    assert entries["io.github.old/gone"].registry_status == "deleted"
    remote = entries["io.github.old/remote"]
    assert (remote.transport, remote.url, remote.version) == (
        Transport.STREAMABLE_HTTP,
        "https://old.example.com/mcp",
        "1.0.0",
    )
    assert remote.secret_header_names == ("Authorization",)
    package = entries["io.github.old/package"]
    assert package.command[-4:] == ("-y", "old-mcp@0.3.0", "--mode", "stdio")
    assert package.secret_header_names == ("OLD_KEY",)


def test_single_server_json_list_and_directory(tmp_path, write_json):
    server = json.loads((FIXTURES / "server_variables.json").read_text(encoding="utf-8"))
    single = load_entries(str(FIXTURES / "server_variables.json"), environ=ENV)
    assert [e.name for e in single] == ["com.example/tenant"]
    other = dict(server, name="com.example/other")
    as_list = load_entries(str(write_json("many.json", [server, other])), environ=ENV)
    assert [e.name for e in as_list] == ["com.example/tenant", "com.example/other"]
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(server), encoding="utf-8")
    (folder / "b.json").write_text((FIXTURES / "simple_list.json").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "notes.txt").write_text("ignored", encoding="utf-8")
    # a directory is read as ONE kind: a server.json beside a simple list is an error naming both
    with pytest.raises(InputError, match=r"files of different kinds \(server-json: a.json; list: b.json\)"):
        load_entries(str(folder), environ=ENV)
    (folder / "b.json").write_text(json.dumps(other), encoding="utf-8")
    entries = load_entries(str(folder), environ=ENV)
    assert [e.name for e in entries] == ["com.example/tenant", "com.example/other"]


def test_stdin(monkeypatch):
    data = (FIXTURES / "simple_list.json").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    entries = load_entries("-", environ=ENV)
    assert entries[0].name == "docs"
    assert entries[0].source == "stdin"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"hello": "world"}', "not a registry response, server.json"),
        (b"not json at all", "not JSON"),
        (b"\xff\xfe\x00", "not JSON"),  # decoded through scanner.wire (U+FFFD), then not JSON
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    ],
)
def test_unrecognised_inputs(tmp_path, content, message):
    path = tmp_path / "input.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        load_entries(str(path), environ=ENV)
    assert "\n" not in str(caught.value)


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_entries(str(tmp_path / "nope.json"), environ=ENV)
    with pytest.raises(InputError, match=r"no \.json files"):
        load_entries(str(tmp_path), environ=ENV)


def test_hostile_shapes_do_not_crash(write_json):
    rows = [
        42,
        {"server": {"name": ["a", "list"], "version": 7}},
        {"server": {"name": "io.x/y", "remotes": [{"type": "streamable-http", "url": 5}, "x"], "packages": "npm"}},
        {"server": {"name": "io.x/z", "remotes": [{"type": "sse", "url": "file:///etc/passwd"}]}},
        {
            "server": {
                "name": "io.x/w",
                "remotes": [
                    {
                        "type": "sse",
                        "url": "https://w.example.com",
                        "headers": [
                            {"name": "X-Bad", "value": "a\r\nInjected: 1"},
                            {"name": "Bad Name", "value": "v"},
                            {"name": 3},
                        ],
                    }
                ],
            }
        },
    ]
    entries = by_name(load_entries(str(write_json("rows.json", {"servers": rows})), environ=ENV))
    assert entries["io.x/y"].skip == "remote has no usable url"
    assert entries["io.x/z"].skip == "remote URL 'file:///etc/passwd': scheme 'file' is not http or https"
    assert entries["io.x/w"].headers == {}
    assert sum(1 for name in entries if name.startswith("invalid-entry-")) == 2


def test_updated_since_filters_a_saved_response():
    entries = load_entries(str(SAMPLE), updated_since="2025-12-18T00:00:00Z", environ=ENV)
    # two rows of the slice were updated on December 18th (04:40 and 08:09); 17th-evening rows are left out
    assert [e.name for e in entries] == ["biz.icecat/mcp", "io.github.homeassistant-ai/ha-mcp"]  # file order
    assert len(load_entries(str(SAMPLE), updated_since="2020-01-01T00:00:00Z", environ=ENV)) == 57
