"""The CI entry point (``python -m scanner.check.ci``, what the Action and the pre-commit hook run) against a hostile
pull
request (issue 33 item 4): it runs under envguard as ``fathom`` does, a config typo is one line, and an output a
pull request planted as a symlink never reaches the job summary or the step outputs."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from scanner import confine
from tests.cli.test_ci import CLEAN, run_action, run_hook
from tests.servers.launch import hostile_stdio_command

SECRET = "sk-ci-runner-token-5e1d77aa"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
@pytest.mark.timeout(150)
def test_a_server_started_by_the_action_cannot_read_the_actions_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.txt"
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", SECRET)  # what a runner holds in the step's environment
    stdio = shlex.join(hostile_stdio_command("read-ancestors", "--pid-file", str(seen)))
    done, outputs, summary = run_action(tmp_path, stdio=stdio, args="--timeout 60")
    read = seen.read_text(encoding="utf-8")
    if read:  # no namespace: the first ancestor is the scanner.check.ci process itself
        parent = read.splitlines()[0].split(":", 1)[0]
        line = next(line for line in read.splitlines() if line.startswith(f"{parent}: "))
        assert line.endswith("PermissionError"), read[:500]
    else:  # its parent is PID 1 of a namespace of its own (issue 42, as root too): the Action is not there
        assert confine.namespaces()[0]
    assert SECRET not in read and SECRET not in done.stdout + done.stderr + summary
    assert outputs["exit-code"] in {"0", "1", "3"}


def test_the_pre_commit_hook_with_a_config_typo_says_one_line(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(CLEAN), encoding="utf-8")
    (tmp_path / "fathom.toml").write_text('fail_on = "warning"\n', encoding="utf-8")  # fail-on, misspelt
    done = run_hook(tmp_path, "tools.json")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("fathom: ") and "unknown key 'fail_on'" in lines[0]
    (tmp_path / "fathom.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    done = run_hook(tmp_path, "tools.json")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nests deeper" in done.stderr, done.stderr


def test_a_planted_summary_symlink_never_reaches_the_job_summary(tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    work = tmp_path / "checkout"
    (work / ".git").mkdir(parents=True)
    (work / "tools.json").write_text(json.dumps(CLEAN), encoding="utf-8")
    (work / "fathom.md").symlink_to(secret)  # the Action's default markdown path, committed as a symlink
    done, outputs, summary = run_action(work, tools_file="tools.json")
    assert done.returncode == 2 and "fathom.md is a symbolic link" in done.stderr
    assert SECRET not in summary and outputs["markdown"] == "" and outputs["sarif"] == ""
    assert secret.read_text(encoding="utf-8") == SECRET and os.path.islink(work / "fathom.md")
    # a committed regular fathom.md that check did not write (it stopped first) is not reported either
    os.unlink(work / "fathom.md")
    (work / "fathom.md").write_text(f"planted {SECRET}\n", encoding="utf-8")
    (work / "fathom.toml").write_text("typo = 1\n", encoding="utf-8")
    done, outputs, summary = run_action(work, tools_file="tools.json")
    assert done.returncode == 2 and SECRET not in summary and outputs["markdown"] == ""
