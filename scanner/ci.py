"""What the GitHub Action (``action.yml``) and the pre-commit hook (``.pre-commit-hooks.yaml``) run.

``python -m scanner.ci action`` turns the Action's inputs (``INPUT_*`` environment variables, set by the
composite step) into ONE ``fathom check`` run: the text report in the log, SARIF to the ``sarif`` input's path
(for the upload step), the Markdown to the ``markdown`` input's path (for the optional PR comment) and appended to
``$GITHUB_STEP_SUMMARY``, and ``score``, ``tokens``, ``sarif``, ``markdown`` and ``exit-code`` written to
``$GITHUB_OUTPUT``. Its exit code is the check's (1 for a failed gate, 3 for a server
that could not be reached...), so the step fails exactly when the check does; the upload still runs.

``python -m scanner.ci pre-commit [check flags ...] FILE ...`` checks each staged tools file (the hook's
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

# Action input (as the composite step exports it) -> the check flag it becomes. Multi-value inputs take one
# value per line or separated by spaces or commas.
_VALUE_FLAGS = {
    "TOOLS_FILE": "--tools-file",
    "URL": "--url",
    "STDIO": "--stdio",
    "CONFIG": "--config",
    "FAIL_ON": "--fail-on",
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


def run_action(env: Mapping[str, str]) -> int:
    sarif = _input(env, "SARIF") or "fathom.sarif"
    markdown = _input(env, "MARKDOWN") or "fathom.md"
    with tempfile.TemporaryDirectory(prefix="fathom-action-") as scratch:
        data = Path(scratch) / "check.json"
        code = _run_fathom(action_argv(env, sarif, markdown, str(data)))
        step_summary = env.get("GITHUB_STEP_SUMMARY")
        summary = Path(markdown)
        if step_summary and summary.is_file():
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(summary.read_text(encoding="utf-8") + "\n")
        outputs = {
            "exit-code": str(code),
            "sarif": sarif if Path(sarif).is_file() else "",
            "markdown": markdown if summary.is_file() else "",
        }
        if data.is_file():
            checked = json.loads(data.read_text(encoding="utf-8"))
            score = checked.get("score") or {}
            tokens = checked.get("tokens") or {}
            outputs["score"] = str(score.get("score", ""))
            outputs["tokens"] = str(max((count["tokens"] for count in tokens.values()), default=""))
    github_output = env.get("GITHUB_OUTPUT")
    if github_output:
        with open(github_output, "a", encoding="utf-8") as handle:
            handle.writelines(f"{key}={value}\n" for key, value in outputs.items())
    return code


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
        from scanner.checkconfig import load_config

        named = flags[flags.index("--config") + 1] if "--config" in flags[:-1] else None
        if load_config(Path(named) if named else None).fail_on is None:
            flags.append("--strict")  # a hook that never fails is no hook: problems fail unless told otherwise
    worst = 0
    for path in files:
        print(f"fathom check --tools-file {path}", flush=True)
        worst = max(worst, _run_fathom(["check", *flags, "--tools-file", path]))
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["action"]:
        return run_action(os.environ)
    if args[:1] == ["pre-commit"]:
        return run_pre_commit(args[1:])
    print("usage: python -m scanner.ci action | pre-commit [check flags ...] FILE ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
