"""The drop-in CI: ``action.yml`` and ``.pre-commit-hooks.yaml`` run ``python -m scanner.check.ci``; tested here as
GitHub and pre-commit run them (a subprocess with the inputs in ``INPUT_*``, the hook's entry plus file names),
against a real SDK server and real files. The docs' copy-paste examples are checked against both files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from scanner.check.ci import _LIST_FLAGS, _VALUE_FLAGS, split_hook_args
from tests.servers.launch import RunningServer, free_port

ROOT = Path(__file__).parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
DOCS = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
SARIF_SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text("utf-8"))

CLEAN = [
    {
        "name": "get_forecast",
        "description": "Hourly weather forecast for the next two days at a latitude and longitude, in metric units.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "latitude": {"type": "number", "description": "Latitude in degrees, e.g. 47.37."},
                "longitude": {"type": "number", "description": "Longitude in degrees, e.g. 8.54."},
            },
            "required": ["latitude", "longitude"],
        },
        "annotations": {"readOnlyHint": True},
    }
]
# A stable warning (MCP208: a parameter through $ref); an undescribed parameter (MCP207) is a preview rule, never gated.
_REF = {"$ref": "#/$defs/city"}
_CITY = {"type": "string", "description": "The city, e.g. Zurich."}
WARNS = [dict(CLEAN[0], inputSchema={"type": "object", "properties": {"city": _REF}, "$defs": {"city": _CITY}})]
BROKEN = [dict(CLEAN[0], inputSchema={"type": "object", "properties": {"city": {}}, "required": ["town"]})]


def run_action(
    tmp_path: Path, github: dict[str, str] | None = None, **inputs: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], str]:
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("INPUT_", "GITHUB_"))}
    env |= github or {}
    env |= {f"INPUT_{name.upper().replace('-', '_')}": value for name, value in inputs.items()}
    env |= {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}
    done = subprocess.run(
        [sys.executable, "-m", "scanner.check.ci", "action"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines())
    return done, said, summary.read_text(encoding="utf-8")


def test_every_action_input_reaches_the_script() -> None:
    (step,) = [step for step in ACTION["runs"]["steps"] if step.get("id") == "check"]
    assert step["run"] == "python -m scanner.check.ci action"
    handled = set(_VALUE_FLAGS) | set(_LIST_FLAGS) | {"STRICT", "ARGS", "SARIF", "MARKDOWN"}
    passed = {name.removeprefix("INPUT_") for name in step["env"]}
    steps_only = ("upload-sarif", "python-version", "pr-comment", "github-token")
    script_inputs = {name for name in ACTION["inputs"] if name not in steps_only}
    assert passed == handled == {name.upper().replace("-", "_") for name in script_inputs}
    for name, value in step["env"].items():
        input_name = name.removeprefix("INPUT_").lower().replace("_", "-")
        assert value == "${{ inputs." + input_name + " }}"
    assert set(ACTION["outputs"]) == {"score", "tokens", "sarif", "markdown", "exit-code", "can-write"}
    for name in ACTION["outputs"]:
        assert ACTION["outputs"][name]["value"] == "${{ steps.check.outputs." + name + " }}"
    for step in ACTION["runs"]["steps"]:  # every input a later step reads exists
        for used in re.findall(r"inputs\.([a-z-]+)", json.dumps(step)):
            assert used in ACTION["inputs"], used


def test_action_gates_a_server_writes_sarif_summary_and_outputs(sdk_http: RunningServer, tmp_path: Path) -> None:
    done, outputs, summary = run_action(
        tmp_path, url=sdk_http.url("/mcp"), fail_on="note", max_tokens="100000 openai=99999", args="--timeout 20"
    )
    # the SDK server's tools carry no annotations (MCP110 notes); its calculator `add` is no write (catalogue 5)
    assert done.returncode == 1, done.stderr
    assert "Tokens per turn" in done.stdout and "FAILED --fail-on note" in done.stdout
    assert "fathom: gate --fail-on note failed" in done.stderr
    assert outputs["exit-code"] == "1" and outputs["sarif"] == "fathom.sarif" and outputs["markdown"] == "fathom.md"
    assert (tmp_path / "fathom.md").read_text(encoding="utf-8") in summary
    assert 0 < float(outputs["score"]) < 100 and int(outputs["tokens"]) > 0
    assert summary.startswith("earlier step\n## Tool list check: ")  # appended, never overwritten
    assert "| `--fail-on note` | **failed** |" in summary and "| `--max-tokens openai=99999` | passed |" in summary
    log = json.loads((tmp_path / "fathom.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["runs"][0]["properties"]["score"]["score"] == float(outputs["score"])


def test_action_passes_and_saves_a_baseline_and_badge(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(CLEAN), encoding="utf-8")
    done, outputs, _ = run_action(
        tmp_path, tools_file="tools.json", strict="true", save_baseline="base.json", badge="fathom.svg", sarif="x.sarif"
    )
    assert done.returncode == 0, done.stderr
    assert outputs["exit-code"] == "0" and outputs["score"] == "100.0" and outputs["sarif"] == "x.sarif"
    assert json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))["fathom_baseline"] == 1
    assert (tmp_path / "fathom.svg").read_text(encoding="utf-8").startswith("<svg")
    assert json.loads((tmp_path / "fathom.json").read_text(encoding="utf-8"))["color"] == "brightgreen"
    # the baseline gate, as a pull request would run it against the saved file
    (tmp_path / "tools.json").write_text(json.dumps([*CLEAN, dict(CLEAN[0], name="get_more")]), encoding="utf-8")
    done, outputs, summary = run_action(tmp_path, tools_file="tools.json", baseline="base.json", max_increase="10%")
    assert done.returncode == 1 and "--max-increase 10% failed" in done.stderr
    assert "| get\\_more | added |" in summary


def test_action_with_an_unreachable_server_still_uploads_a_valid_sarif(tmp_path: Path) -> None:
    done, outputs, summary = run_action(tmp_path, url=f"http://127.0.0.1:{free_port()}/mcp", args="--timeout 5")
    assert done.returncode == 3
    assert outputs["exit-code"] == "3" and outputs["sarif"] == "fathom.sarif" and outputs["score"] == ""
    log = json.loads((tmp_path / "fathom.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    assert "connect_error" in summary


# --- pre-commit -----------------------------------------------------------------------------------------------


def run_hook(tmp_path: Path, *files: str, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    (hook,) = HOOKS
    entry = hook["entry"].split()
    return subprocess.run(
        [sys.executable if entry[0] == "python" else entry[0], *entry[1:], *args, *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_pre_commit_hook_fails_on_problems_and_honours_args(tmp_path: Path) -> None:
    (hook,) = HOOKS
    assert hook["id"] == "fathom-check" and hook["language"] == "python"
    assert re.search(hook["files"], "server/tools.json") and not re.search(hook["files"], "package.json")
    for name, tools in (("clean", CLEAN), ("warns", WARNS), ("broken", BROKEN)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    assert run_hook(tmp_path, "clean/tools.json", "warns/tools.json").returncode == 0  # warnings pass by default
    broken = run_hook(tmp_path, "clean/tools.json", "broken/tools.json")
    assert broken.returncode == 1 and "fathom check --tools-file broken/tools.json" in broken.stdout
    strict = run_hook(tmp_path, "warns/tools.json", args=("--fail-on", "warning", "--max-tokens", "9000"))
    assert strict.returncode == 1 and "gate --fail-on warning failed" in strict.stderr
    (tmp_path / "fathom.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    assert run_hook(tmp_path, "warns/tools.json").returncode == 1  # the config's gate, not the hook's default


def test_hook_args_are_told_from_file_names() -> None:
    flags, files = split_hook_args(["--baseline", "tools.json", "--strict", "--max-tokens", "9", "a.json", "b.json"])
    assert flags == ["--baseline", "tools.json", "--strict", "--max-tokens", "9"] and files == ["a.json", "b.json"]


# --- docs -----------------------------------------------------------------------------------------------------


def _yaml_blocks() -> list[Any]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", DOCS, flags=re.S)]


def test_the_docs_examples_use_only_real_inputs_and_the_real_hook() -> None:
    used: set[str] = set()
    hooks: set[str] = set()
    for block in _yaml_blocks():
        for job in (block.get("jobs") or {}).values() if isinstance(block, dict) else ():
            for step in job.get("steps", []):
                if "fathom" in str(step.get("uses", "")):
                    used |= set(step.get("with", {}))
        for repo in block.get("repos", []) if isinstance(block, dict) else ():
            hooks |= {hook["id"] for hook in repo.get("hooks", [])}
    assert used and used <= set(ACTION["inputs"]), used - set(ACTION["inputs"])
    assert hooks == {HOOKS[0]["id"]}


@pytest.mark.parametrize("flag", ["--fail-on", "--min-score", "--max-tokens", "--baseline", "--max-increase"])
def test_the_docs_show_each_gate(flag: str) -> None:
    assert flag in DOCS


# --- Outside contributors (issue 37, item 5) ---------------------------------------------------------------------


def _event_file(tmp_path: Path, head: str | None, base: str = "acme/server") -> Path:
    repo = None if head is None else {"full_name": head}
    payload = {"pull_request": {"number": 7, "head": {"repo": repo}, "base": {"repo": {"full_name": base}}}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("event", "head", "actor", "can_write", "why"),
    [
        ("pull_request", "stranger/server", "stranger", False, "comes from a fork (stranger/server)"),
        ("pull_request", None, "stranger", False, "a fork that was deleted"),
        ("pull_request", "acme/server", "dependabot[bot]", False, "Dependabot"),
        ("pull_request", "acme/server", "maintainer", True, ""),
        ("push", None, "maintainer", True, ""),
    ],
)
def test_the_token_is_known_read_only_for_forks_and_dependabot(
    tmp_path: Path, event: str, head: str | None, actor: str, can_write: bool, why: str
) -> None:
    from scanner.check.ci import write_access

    env = {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(_event_file(tmp_path, head)),
        "GITHUB_REPOSITORY": "acme/server",
        "GITHUB_ACTOR": actor,
    }

    writes, said = write_access(env)

    assert writes is can_write and why in said


def test_a_forks_pull_request_gets_the_summary_and_the_checks_result_without_upload_or_comment(
    tmp_path: Path,
) -> None:
    """A fork's PR: GitHub's token is read-only, so the upload and the comment would fail with "Resource not
    accessible by integration" and turn every outside contribution red. The check still runs and gates."""
    (tmp_path / "tools.json").write_text(json.dumps(WARNS), encoding="utf-8")
    event = _event_file(tmp_path, "stranger/server")

    done, said, summary = run_action(
        tmp_path,
        tools_file="tools.json",
        fail_on="warning",
        github={"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)},
    )

    assert done.returncode == 1  # the gate's own result stands
    assert said["can-write"] == "false"
    assert "::notice title=Fathom::this pull request comes from a fork (stranger/server)" in done.stdout
    assert "MCP208" in summary  # the job summary carries the check
    steps = {step.get("name"): step for step in ACTION["runs"]["steps"]}
    for name in ("Upload SARIF", "Comment on the pull request"):
        assert "steps.check.outputs.can-write == 'true'" in steps[name]["if"]
    assert steps["Upload SARIF"]["continue-on-error"] is True
    assert "actions: read" in steps["Say why the SARIF was not uploaded"]["run"]


class _FakeGitHub:
    """GitHub's issue-comment API on loopback: what the comment step reads and writes, and a 403 on demand."""

    def __init__(self, comments: list[dict[str, Any]], refuse: bool = False) -> None:
        import http.server
        import threading

        self.comments, self.refuse, self.calls = comments, refuse, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.calls.append((self.command, self.path.split("?")[0], body, self.headers["Authorization"]))
                if fake.refuse and self.command != "GET":
                    self._answer(403, {"message": "Resource not accessible by integration"})
                elif self.command == "GET":
                    self._answer(200, fake.comments)
                else:
                    self._answer(200 if self.command == "PATCH" else 201, {"id": 99})

            do_GET = do_POST = do_PATCH = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _comment(tmp_path: Path, github: _FakeGitHub) -> subprocess.CompletedProcess[str]:
    body = tmp_path / "fathom.md"
    body.write_text("## Fathom\nscore 93.0\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env |= {
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": "acme/server",
        "GITHUB_WORKFLOW": "MCP tool list",
        "GITHUB_JOB": "fathom",
        "GH_TOKEN": "ghs_job_token",
        "PR_NUMBER": "7",
        "BODY_FILE": str(body),
    }
    return subprocess.run(
        [sys.executable, "-m", "scanner.check.ci", "comment"], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_comment_edits_its_own_and_never_another_workflows(tmp_path: Path) -> None:
    """``gh pr comment --edit-last`` edited the bot's last comment, which may be another workflow's."""
    bot = {"login": "github-actions[bot]"}
    github = _FakeGitHub(
        [
            {"id": 11, "user": bot, "body": "<!-- fathom-check MCP tool list/fathom -->\nold report"},
            {"id": 12, "user": bot, "body": "Coverage: 91 % (another workflow)"},
        ]
    )
    try:
        done = _comment(tmp_path, github)
    finally:
        github.close()

    assert done.returncode == 0, done.stdout + done.stderr
    writes = [call for call in github.calls if call[0] != "GET"]
    assert [(method, path) for method, path, _, _ in writes] == [("PATCH", "/repos/acme/server/issues/comments/11")]
    assert writes[0][2]["body"].startswith("<!-- fathom-check MCP tool list/fathom -->\n## Fathom")
    assert writes[0][3] == "Bearer ghs_job_token"


def test_the_first_comment_is_posted_with_its_marker(tmp_path: Path) -> None:
    github = _FakeGitHub([{"id": 12, "user": {"login": "github-actions[bot]"}, "body": "Coverage: 91 %"}])
    try:
        done = _comment(tmp_path, github)
    finally:
        github.close()

    assert done.returncode == 0
    writes = [(method, path) for method, path, _, _ in github.calls if method != "GET"]
    assert writes == [("POST", "/repos/acme/server/issues/7/comments")]


def test_a_token_that_may_not_comment_is_a_notice_not_a_red_job(tmp_path: Path) -> None:
    github = _FakeGitHub([], refuse=True)
    try:
        done = _comment(tmp_path, github)
    finally:
        github.close()

    assert done.returncode == 0
    assert "::notice title=Fathom::no PR comment: the token may not write to this pull request (HTTP 403)" in (
        done.stdout
    )
