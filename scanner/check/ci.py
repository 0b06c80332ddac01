"""What the GitHub Action (``action.yml``) and the pre-commit hook (``.pre-commit-hooks.yaml``) run.

``python -m scanner.check.ci action`` turns the Action's inputs (``INPUT_*`` environment variables, set by the
composite step) into ONE ``fathom check`` run: the text report in the log, SARIF to the ``sarif`` input's path
(for the upload step), the Markdown to the ``markdown`` input's path (for the optional PR comment) and appended to
``$GITHUB_STEP_SUMMARY``, and ``score``, ``tokens``, ``sarif``, ``markdown``, ``exit-code`` and ``can-write``
(:func:`write_access`: false for a fork's or Dependabot's pull request) written to ``$GITHUB_OUTPUT``. Its exit
code is the check's (1 for a failed gate, 3 for a server that could not be reached...), so the step fails exactly
when the check does; the upload still runs.

``python -m scanner.check.ci comment`` posts the Markdown on the pull request, editing this job's own earlier comment
(found by a marker, :func:`comment_marker`); a token that may not write gives a notice, never a red job.

``python -m scanner.check.ci pre-commit [check flags ...] FILE ...`` checks each staged tools file (the hook's
``args`` go before the files; a flag's value is told from a file by the check command's own options) and exits
with the worst code of them. Without ``--fail-on``/``--strict`` in the args or ``fail-on`` in the config file it
adds ``--strict``: a hook that never fails would not be one.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Action input (as the composite step exports it) -> the check flag it becomes. Multi-value inputs take one
# value per line or separated by spaces or commas.
_VALUE_FLAGS = {
    "TOOLS_FILE": "--tools-file",
    "URL": "--url",
    "STDIO": "--stdio",
    "CONFIG": "--config",
    "FAIL_ON": "--fail-on",
    "FAIL_ON_NEW": "--fail-on-new",
    "MIN_SCORE": "--min-score",
    "FAIL_ON_REJECT": "--fail-on-reject",
    "BASELINE": "--baseline",
    "MAX_INCREASE": "--max-increase",
    "SAVE_BASELINE": "--save-baseline",
    "BADGE": "--badge",
}
_LIST_FLAGS = {"MAX_TOKENS": "--max-tokens", "SELECT": "--select", "IGNORE": "--ignore"}


def _input(env: Mapping[str, str], name: str) -> str:
    return env.get(f"INPUT_{name}", "").strip()


def action_argv(env: Mapping[str, str], sarif: str, summary: str, data: str) -> list[str]:
    """The ``fathom check`` arguments for the Action's inputs in ``env``."""
    argv = ["check"]
    for name, flag in _VALUE_FLAGS.items():
        value = _input(env, name)
        if value:
            argv += [flag, value]
    for name, flag in _LIST_FLAGS.items():
        for value in _input(env, name).replace(",", " ").split():
            argv += [flag, value]
    if _input(env, "STRICT").lower() == "true":
        argv.append("--strict")
    argv += shlex.split(_input(env, "ARGS"))
    argv += ["--format", "text", "--write", f"sarif={sarif}", "--write", f"markdown={summary}"]
    return [*argv, "--write", f"json={data}"]


def _run_fathom(argv: Sequence[str]) -> int:
    from scanner.cli import app

    try:
        app(args=list(argv), prog_name="fathom")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def _identity(path: Path) -> tuple[int, int, int] | None:
    """A file's (device, inode, mtime) without following a symlink; None when it does not exist."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns


def _written(path: Path, before: tuple[int, int, int] | None) -> bool:
    """Whether this run wrote ``path``: a regular file, not a symlink, new since ``before`` (``check`` replaces
    its outputs with new files). A file the pull request committed there, or a symlink, is never reported."""
    import stat

    now = _identity(path)
    return now is not None and now != before and stat.S_ISREG(os.lstat(path).st_mode)


def run_action(env: Mapping[str, str]) -> int:
    from scanner import safefile

    sarif = _input(env, "SARIF") or "fathom.sarif"
    markdown = _input(env, "MARKDOWN") or "fathom.md"
    before = {name: _identity(Path(name)) for name in (sarif, markdown)}
    with tempfile.TemporaryDirectory(prefix="fathom-action-") as scratch:
        data = Path(scratch) / "check.json"
        code = _run_fathom(action_argv(env, sarif, markdown, str(data)))
        step_summary = env.get("GITHUB_STEP_SUMMARY")
        summary = Path(markdown)
        wrote_summary = _written(summary, before[markdown])
        if step_summary and wrote_summary:
            text = safefile.read_regular(summary, label=markdown, max_bytes=64 << 20).decode("utf-8", "replace")
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        outputs = {
            "exit-code": str(code),
            "sarif": sarif if _written(Path(sarif), before[sarif]) else "",
            "markdown": markdown if wrote_summary else "",
        }
        if data.is_file():
            checked = json.loads(data.read_text(encoding="utf-8"))
            score = checked.get("score") or {}
            tokens = checked.get("tokens") or {}
            outputs["score"] = str(score.get("score", ""))
            outputs["tokens"] = str(max((count["tokens"] for count in tokens.values()), default=""))
    can_write, why = write_access(env)
    outputs["can-write"] = "true" if can_write else "false"
    if not can_write:
        print(f"::notice title=Fathom::{why}", flush=True)
    github_output = env.get("GITHUB_OUTPUT")
    if github_output:
        with open(github_output, "a", encoding="utf-8") as handle:
            handle.writelines(f"{key}={value}\n" for key, value in outputs.items())
    return code


EVENT_MAX_BYTES = 25 << 20  # GitHub's event payloads are far smaller; a larger file is not read


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    """The workflow's event payload (``$GITHUB_EVENT_PATH``), or {} when there is none or it cannot be read."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, "rb") as handle:
            raw = handle.read(EVENT_MAX_BYTES + 1)
        payload = json.loads(raw) if len(raw) <= EVENT_MAX_BYTES else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_review", "pull_request_review_comment"})


def write_access(env: Mapping[str, str]) -> tuple[bool, str]:
    """Whether the job's token can write (a SARIF upload, a PR comment), and why not.

    GitHub gives a ``pull_request`` workflow a read-only token, whatever its ``permissions:`` say, when the pull
    request comes from a fork, and when Dependabot opened it: then the upload and the comment fail with
    "Resource not accessible by integration". Those are known from the event before trying; a token made
    read-only otherwise (repository settings) shows when a step is refused, and the steps say so then.
    """
    if env.get("GITHUB_EVENT_NAME", "") not in PULL_REQUEST_EVENTS:
        return True, ""
    pull = _dig(_event(env), "pull_request")
    head = _dig(pull, "head", "repo", "full_name")
    base = _dig(pull, "base", "repo", "full_name") or env.get("GITHUB_REPOSITORY")
    if pull is not None and head != base:
        source = f"a fork ({head})" if isinstance(head, str) else "a fork that was deleted"
        return False, (
            f"this pull request comes from {source}: GitHub gives its workflow a read-only token, so Fathom "
            "neither uploads SARIF nor comments; the job summary and the job's result carry the check"
        )
    if env.get("GITHUB_ACTOR") == "dependabot[bot]":
        return False, (
            "Dependabot's pull requests get a read-only token, so Fathom neither uploads SARIF nor comments; "
            "the job summary and the job's result carry the check"
        )
    return True, ""


COMMENT_MARKER = "<!-- fathom-check {} -->"
"""Opens every PR comment the Action posts, naming the workflow and job, so it edits its own comment and never
another workflow's (``gh pr comment --edit-last`` edits the last comment of the same bot, whoever posted it)."""


def comment_marker(env: Mapping[str, str]) -> str:
    """The marker of this workflow's job: ``<!-- fathom-check CI/fathom -->`` (no ``--`` can end it early)."""
    where = f"{env.get('GITHUB_WORKFLOW', '')}/{env.get('GITHUB_JOB', '')}"
    return COMMENT_MARKER.format("".join(c for c in where if c.isprintable() and c not in "<>-") or "-")


def _github(env: Mapping[str, str], method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One GitHub REST call with the job's token; :class:`urllib.error.HTTPError` for an error status."""
    import urllib.request

    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    request = urllib.request.Request(
        f"{api}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={
            "Authorization": f"Bearer {env.get('GH_TOKEN', '')}",
            "Accept": "application/vnd.github+json",
            "Content-Type": "application/json",
            "User-Agent": "fathom-action",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # the API URL GitHub sets for the job
        raw = answer.read(EVENT_MAX_BYTES + 1)
    return json.loads(raw) if raw else None


def post_comment(env: Mapping[str, str]) -> int:
    """Post the Markdown (``BODY_FILE``) on the pull request (``PR_NUMBER``), editing this job's earlier comment
    (found by :func:`comment_marker`) when there is one. A token that may not write is a notice, not a failure:
    the check's own result stands."""
    import urllib.error

    repo, number = env.get("GITHUB_REPOSITORY", ""), env.get("PR_NUMBER", "")
    marker = comment_marker(env)
    body = marker + "\n" + Path(env.get("BODY_FILE", "")).read_text(encoding="utf-8")
    try:
        mine = None
        for page in range(1, 51):  # 5,000 comments at most
            comments = _github(env, "GET", f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}")
            if not isinstance(comments, list):
                break
            for comment in comments:
                if isinstance(comment, dict) and str(comment.get("body", "")).startswith(marker):
                    mine = comment.get("id")
            if len(comments) < 100:
                break
        if mine is not None:
            _github(env, "PATCH", f"/repos/{repo}/issues/comments/{int(mine)}", {"body": body})
        else:
            _github(env, "POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403, 404):
            print(
                f"::notice title=Fathom::no PR comment: the token may not write to this pull request (HTTP "
                f"{exc.code}); give the job 'pull-requests: write', or read the check in the job summary",
                flush=True,
            )
            return 0
        print(f"::warning title=Fathom::the PR comment failed: HTTP {exc.code}", flush=True)
        return 0
    except (OSError, ValueError) as exc:
        print(f"::warning title=Fathom::the PR comment failed: {exc}", flush=True)
        return 0
    return 0


def _value_options() -> set[str]:
    """The ``check`` options that take a value (so the word after them is not a file name)."""
    import typer

    from scanner.cli import app

    group = typer.main.get_command(app)
    command = group.commands["check"]  # type: ignore[attr-defined]
    return {name for param in command.params if not getattr(param, "is_flag", True) for name in param.opts}


def split_hook_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``[check flags ...] FILE ...`` into the flags and the files pre-commit appended."""
    takes_value = _value_options()
    flags: list[str] = []
    files: list[str] = []
    words = iter(args)
    for word in words:
        if word.startswith("-") and not files:
            flags.append(word)
            if word in takes_value:
                flags.append(next(words, ""))
        else:
            files.append(word)
    return flags, files


def run_pre_commit(args: Sequence[str]) -> int:
    """Check every file; exit with the worst code (a failed gate in any file fails the hook)."""
    flags, files = split_hook_args(args)
    if not {"--fail-on", "--strict"} & set(flags):
        from scanner.check.config import load_config

        named = flags[flags.index("--config") + 1] if "--config" in flags[:-1] else None
        if load_config(Path(named) if named else None).fail_on is None:
            flags.append("--strict")  # a hook that never fails is no hook: problems fail unless told otherwise
    worst = 0
    for path in files:
        print(f"fathom check --tools-file {path}", flush=True)
        worst = max(worst, _run_fathom(["check", *flags, "--tools-file", path]))
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    """The entry point: under envguard as ``fathom`` is (children cannot read this process's environment), and
    every error one line on stderr with its exit code, never a traceback."""
    from scanner.envguard import protect_environment
    from scanner.errors import FathomError

    protect_environment()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["action"]:
            return run_action(os.environ)
        if args[:1] == ["pre-commit"]:
            return run_pre_commit(args[1:])
        if args[:1] == ["comment"]:
            return post_comment(os.environ)
    except FathomError as exc:
        from scanner.cli.base import _one_line

        print(f"fathom: {_one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fathom: interrupted", file=sys.stderr)
        return 130
    print("usage: python -m scanner.check.ci action | comment | pre-commit [check flags ...] FILE ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
