"""MCP701-MCP705 on registries the tests build: each rule's fixture (tests/fixtures/rules/MCP70x, a list of
server.json entries) fires with its pointer and details, its near miss does not; the findings reach
``scan --dry-run``, are stored with each entry's scan whatever its outcome, and show in ``findings`` and ``diff``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from typer.testing import CliRunner

from scanner.cli import app
from scanner.models import Finding
from scanner.registry import load_entries
from scanner.registry.schema_check import _validator, schema_date, shipped_dates
from scanner.rules import RULES
from scanner.rules.registrydata import REGISTRY_CODES, registry_findings, url_key

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"
SAMPLE = Path(__file__).parent.parent / "fixtures" / "registry" / "registry-sample.json"
runner = CliRunner()


def _load(code: str, kind: str) -> list[Any]:
    return list(json.loads((FIXTURES / code / f"{kind}.json").read_text(encoding="utf-8")))


def _of(servers: list[Any], code: str) -> list[Finding]:
    return [finding for found in registry_findings(servers) for finding in found if finding.code == code]


def test_the_registry_family_is_registered() -> None:
    assert [code for code, rule in RULES.items() if rule.scope == "registry"] == list(REGISTRY_CODES)


@pytest.mark.parametrize("code", REGISTRY_CODES)
def test_positive_fixture_fires_and_negative_is_silent(code: str) -> None:
    hits = _of(_load(code, "positive"), code)
    assert hits, f"{code} did not fire on its positive fixture"
    rule = RULES[code]
    for finding in hits:
        assert (finding.rule, finding.severity, finding.hint, finding.tool) == (
            rule.slug,
            rule.severity,
            rule.hint,
            None,
        )
        assert finding.message[0].isupper() and finding.message.endswith(".")
        json.dumps(finding.to_json())
    assert not _of(_load(code, "negative"), code)


def test_mcp701_names_the_unfilled_variable() -> None:
    (finding,) = _of(_load("MCP701", "positive"), "MCP701")
    assert finding.pointer == "/remotes/0/url"
    assert finding.details == {"url": "https://{tenant}.example.com/mcp", "variables": ["tenant"]}


def test_mcp702_on_only_unrunnable_kinds() -> None:
    server = {"name": "io.example/x", "remotes": [{"type": "sse"}], "packages": [{"registryType": "npm"}]}
    (finding,) = _of([server], "MCP702")
    assert finding.details == {"remotes": 1, "packages": 1}


def test_mcp703_two_servers_on_one_url_name_each_other() -> None:
    mail, calendar = _of(_load("MCP703", "positive"), "MCP703")
    assert mail.details == {"url": "https://mcp.example.com/mcp", "others": 1, "names": ["com.example/calendar"]}
    assert calendar.details["names"] == ["com.example/mail"]
    assert url_key("HTTPS://Mcp.Example.com:8443/A?x=1") == "https://mcp.example.com:8443/A"


def test_mcp703_caps_names_at_ten() -> None:
    servers = [{"name": f"io.example/s{n:02d}", "remotes": [{"url": "https://shared.example/mcp"}]} for n in range(14)]
    findings = _of(servers, "MCP703")
    assert len(findings) == 14
    assert findings[0].details["others"] == 13 and len(findings[0].details["names"]) == 10


def test_mcp704_lists_every_error_with_its_path_and_the_schema_used() -> None:
    (finding,) = _of(_load("MCP704", "positive"), "MCP704")
    assert finding.details["schema"] == "2025-09-29" and finding.details["schema_named"] is True
    assert finding.details["errors"] == [
        {"path": "/packages/0/version", "message": '{"const":"latest"} is not allowed for "latest"'},
        {"path": "/repository", "message": '"url" is a required property'},
        {"path": "/repository", "message": '"source" is a required property'},
    ]


def test_mcp704_unknown_schema_uses_the_newest_shipped() -> None:
    assert schema_date("https://example.com/schemas/2031-01-01/server.schema.json") == (shipped_dates()[-1], False)
    assert schema_date(None) == (shipped_dates()[-1], False)
    named = "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json#/definitions/ServerDetail"
    assert schema_date(named) == ("2025-10-17", True)
    assert shipped_dates() == ("2025-07-09", "2025-09-16", "2025-09-29", "2025-10-11", "2025-10-17", "2025-12-11")


def test_the_validator_reports_the_paths_the_reference_validator_reports() -> None:
    # jsonschema-rs (fast) against python-jsonschema (the reference) on real registry rows: the same error paths.
    rows = json.loads(SAMPLE.read_text(encoding="utf-8"))["servers"]
    servers = [row.get("server", row) for row in rows]
    folder = Path(__file__).parent.parent.parent / "scanner" / "registry" / "schemas"
    invalid = 0
    for date in shipped_dates():
        reference = Draft7Validator(json.loads((folder / f"server-{date}.schema.json").read_text(encoding="utf-8")))
        for server in servers:
            expected = sorted(tuple(map(str, error.absolute_path)) for error in reference.iter_errors(server))
            got = sorted(tuple(map(str, error.instance_path)) for error in _validator(date).iter_errors(server))
            assert got == expected, (date, server.get("name"))
            invalid += bool(expected)
    assert invalid > 10  # the sample does hold invalid entries, so the comparison means something


def test_mcp705_lists_what_and_where() -> None:
    (finding,) = _of(_load("MCP705", "positive"), "MCP705")
    assert finding.pointer == "/packages/0"
    at = "/packages/0/"
    assert finding.details["issues"] == [
        {"what": "runner word '-y' in the arguments (the client adds the runner)", "where": at + "runtimeArguments/0"},
        {"what": "argument 'args-mcp@latest' repeats the package", "where": at + "runtimeArguments/1"},
        {"what": "npx has no option '--watch'; it belongs in packageArguments", "where": at + "runtimeArguments/2"},
        {"what": "named argument 'port' has no leading dash", "where": at + "packageArguments/0"},
        {"what": "required argument 'directory' has no value or default", "where": at + "packageArguments/1"},
    ]


def test_mcp705_a_positional_before_an_npm_package_is_run_as_the_package() -> None:
    package = {
        "registryType": "npm",
        "identifier": "x-mcp",
        "runtimeArguments": [{"type": "positional", "value": "other-package"}],
    }
    (finding,) = _of([{"name": "io.example/x", "packages": [package]}], "MCP705")
    assert "npx would run 'other-package' as the package" in finding.message


@pytest.mark.parametrize(
    "server",
    [None, 5, "x", [], {"remotes": 5, "packages": {"a": 1}}, {"name": ["x"], "remotes": [None, 3, {"url": 7}]}],
)
def test_hostile_entries_never_raise(server: Any) -> None:
    registry_findings([server, {"name": "io.example/ok", "remotes": [{"url": "https://a.example/mcp"}]}])


def _registry(tmp_path: Path, servers: list[dict[str, Any]], name: str = "registry.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"servers": [row for server in servers for row in rows_of(server)]}), encoding="utf-8")
    return path


def rows_of(server: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"server": server, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active"}}}]


def census_registry(tmp_path: Path, url: str, valid: bool) -> Path:
    """A registry holding each fault once, plus a live server (valid or not against its schema)."""
    servers = [
        *_load("MCP701", "positive"),
        *_load("MCP702", "positive"),
        *_load("MCP703", "positive"),
        *_load("MCP705", "positive"),
        {
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
            "name": "io.example/live",
            "description": "A live server",
            "version": "1.0.0",
            "repository": {"url": "https://github.com/example/live", "source": "github"} if valid else {},
            "remotes": [{"type": "streamable-http", "url": url}],
        },
    ]
    return _registry(tmp_path, servers, f"registry-{valid}.json")


def test_dry_run_shows_every_entrys_findings(tmp_path: Path) -> None:
    path = census_registry(tmp_path, "https://live.example/mcp", valid=False)
    result = runner.invoke(app, ["scan", str(path), "--dry-run", "--format", "json"])
    assert result.exit_code == 0, result.output
    codes = {row["name"]: [finding["code"] for finding in row["findings"]] for row in json.loads(result.stdout)}
    assert codes == {
        "io.example/tenant": ["MCP701"],
        "io.example/nothing": ["MCP702"],
        "com.example/mail": ["MCP703"],
        "com.example/calendar": ["MCP703"],
        "io.example/args": ["MCP705"],
        "io.example/live": ["MCP704"],
    }
    table = runner.invoke(app, ["scan", str(path), "--dry-run"])
    assert "MCP701" in table.stdout and "findings" in table.stdout


def test_findings_are_stored_per_entry_and_run_and_shown(tmp_path: Path, hostile_http: Any) -> None:
    db = f"sqlite:///{tmp_path / 'census.db'}"
    url = hostile_http.url("/ok")
    for valid in (False, True):
        result = runner.invoke(
            app, ["scan", str(census_registry(tmp_path, url, valid)), "--db", db, "--allow-private", "--retries", "0"]
        )
        assert result.exit_code == 0, result.output
    # MCP7xx rules are preview: asked for with --preview (issue 45), each row then marked
    first = json.loads(
        runner.invoke(app, ["findings", "--run", "1", "--db", db, "--format", "json", "--preview"]).stdout
    )
    assert all(row["status"] == "preview" for row in first if row["code"].startswith("MCP7"))
    by_server: dict[str, list[str]] = {}
    for row in first:
        if row["code"].startswith("MCP7"):
            by_server.setdefault(row["server"], []).append(row["code"])
    # Stored whatever the outcome: the placeholder and the empty entry were skipped, the live one answered.
    assert by_server == {
        "io.example/tenant": ["MCP701"],
        "io.example/nothing": ["MCP702"],
        "com.example/calendar": ["MCP703"],
        "com.example/mail": ["MCP703"],
        "io.example/args": ["MCP705"],
        "io.example/live": ["MCP704"],
    }
    second = json.loads(
        runner.invoke(app, ["findings", "--run", "2", "--db", db, "--format", "json", "--preview"]).stdout
    )
    assert not [row for row in second if row["server"] == "io.example/live" and row["code"].startswith("MCP7")]
    diff = json.loads(
        runner.invoke(app, ["diff", "io.example/live", "--db", db, "--format", "json", "--preview"]).stdout
    )
    assert any("MCP704" in json.dumps(row) and "fixed" in json.dumps(row) for row in diff), diff

    # The server page of run 1 lists the finding (in its preview block); the leaderboard counts it apart and never
    # scores it (same list, same score in both runs).
    scores, warnings, previews = [], [], []
    for run in ("1", "2"):
        site = tmp_path / f"site-{run}"
        built = runner.invoke(app, ["report", "--db", db, "--out", str(site), "--run", run, "--preview"])
        assert built.exit_code == 0, built.output
        board = json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))
        (live,) = [row for row in board["ranked"] if row["server"] == "io.example/live"]
        scores.append(live["score"])
        page = (site / "servers" / f"{live['slug']}.html").read_text(encoding="utf-8")
        if run == "1":  # run 2's page names MCP704 only in its change log (resolved)
            assert "Not valid against server.json schema 2025-09-29" in page
        warnings.append(live["warnings"])
        previews.append(live["preview"])
    assert scores[0] == scores[1] is not None
    # MCP704 is a warning of a preview rule: counted apart (``preview``), never with the list's own warnings
    assert previews[0] == previews[1] + 1 and warnings[0] == warnings[1]


def test_load_entries_attaches_findings_to_the_entry(tmp_path: Path) -> None:
    entries = {
        entry.name: entry for entry in load_entries(str(census_registry(tmp_path, "https://a.example/mcp", True)))
    }
    assert [finding.code for finding in entries["io.example/tenant"].findings] == ["MCP701"]
    assert entries["io.example/live"].findings == ()


def test_a_distributed_job_carries_the_entrys_findings_and_status() -> None:
    from scanner.distributed.queue import entry_from_payload, entry_payload
    from scanner.models import ServerEntry, Transport

    (findings,) = registry_findings(_load("MCP704", "positive"))
    entry = ServerEntry(name="io.example/invalid", transport=Transport.HTTP, findings=findings)
    payload = json.loads(json.dumps(entry_payload(entry)))
    assert entry_from_payload(payload, {}).findings == findings
    gone = ServerEntry(name="io.x/a", transport=Transport.HTTP, skip="x", registry_status="deleted", status_message="m")
    again = entry_from_payload(json.loads(json.dumps(entry_payload(gone))), {})
    assert (again.registry_status, again.status_message) == ("deleted", "m")
