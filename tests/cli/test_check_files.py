"""A pull request's files are hostile input to ``fathom check`` (issue 33 item 4, issue 34 item 5).

Each test is an attack from the issue, run as a user would: in a throwaway checkout (``tmp_path`` with a ``.git``
folder, the working tree) holding the files a pull request could commit: a config naming ``/dev/zero`` or a FIFO as
baseline, deeply nested TOML in another tool's section, hostile baselines, symlinks where the outputs go, an
output named like an input. What a user checks: one ``fathom:`` line on stderr, the exit code, and which files
exist or changed afterwards. Hangs are caught by running the CLI as a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]
TOOLS = (ROOT / "scanner" / "examples" / "example-tools.json").read_text(encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout: ``repo/`` with ``.git`` and a tools file, the current folder; ``outside/`` beside it."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "tools.json").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(repo)
    return repo


def fathom(*args: str, cwd: Path, stdout: int | None = subprocess.PIPE, timeout: float = 60) -> tuple[int, str]:
    """``fathom ARGS`` as a process in ``cwd``: (exit code, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "scanner", *args],
        cwd=cwd,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stderr


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fathom"), stderr
    assert "Traceback" not in stderr
    return lines[0]


# --- what check reads -------------------------------------------------------------------------------------------


def test_a_config_naming_dev_zero_as_baseline_is_refused_at_once(tree: Path) -> None:
    (tree / "fathom.toml").write_text('baseline = "/dev/zero"\n', encoding="utf-8")
    code, err = fathom("check", "-f", "tools.json", cwd=tree, timeout=30)
    assert code == 2 and "/dev/zero" in one_line(err)
    (tree / "zero").symlink_to("/dev/zero")  # the same through a committed symlink
    (tree / "fathom.toml").write_text('baseline = "zero"\n', encoding="utf-8")
    code, err = fathom("check", "-f", "tools.json", cwd=tree, timeout=30)
    assert code == 2 and "zero" in one_line(err)


def test_a_device_or_a_proc_file_is_never_read_as_a_baseline(tree: Path) -> None:
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "/dev/zero"])
    assert result.exit_code == 2 and "is a device, not a regular file" in one_line(result.stderr)
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "/proc/self/status"])
    assert result.exit_code == 2 and "/proc or /sys" in one_line(result.stderr)


@pytest.mark.parametrize("flag", ["--baseline", "--config"])
def test_a_fifo_as_baseline_or_config_does_not_hang(tree: Path, flag: str) -> None:
    os.mkfifo(tree / "pipe")
    code, err = fathom("check", "-f", "tools.json", flag, "pipe", cwd=tree, timeout=30)
    assert code == 2 and "is a FIFO, not a regular file" in one_line(err)


def test_a_fifo_named_in_the_config_does_not_hang(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    (tree / "fathom.toml").write_text('baseline = "pipe"\n', encoding="utf-8")
    code, err = fathom("check", "-f", "tools.json", cwd=tree, timeout=30)
    assert code == 2 and "FIFO" in one_line(err)


def test_a_fifo_as_tools_file_does_not_hang(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    code, err = fathom("check", "-f", "pipe", cwd=tree, timeout=30)
    assert code == 2 and "FIFO" in one_line(err)


def test_a_config_outside_the_tree_cannot_name_a_baseline_there(tree: Path) -> None:
    outside = tree.parent / "outside" / "secret.json"
    outside.write_text('{"fathom_baseline": "hunter2"}', encoding="utf-8")
    (tree / "fathom.toml").write_text(f'baseline = "{outside}"\n', encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2 and "outside the working tree" in one_line(result.stderr)
    assert "hunter2" not in result.output


@pytest.mark.parametrize(
    "name, text",
    [
        ("pyproject.toml", "[tool.black]\nx = " + "[" * 3000 + "]" * 3000 + "\n"),  # another tool's section
        ("pyproject.toml", "[tool.other]\n" + "".join(f"[tool.other.{'a.' * n}b]\n" for n in (200,))),
        ("fathom.toml", "select = " + "[" * 100 + "]" * 100 + "\n"),
        ("fathom.toml", "x = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n"),
    ],
)
def test_deeply_nested_toml_is_one_line(tree: Path, name: str, text: str) -> None:
    (tree / name).write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2 and "nests deeper than 64 levels" in one_line(result.stderr)


def test_a_binary_or_huge_config_is_one_line(tree: Path) -> None:
    (tree / "fathom.toml").write_bytes(b"\x00\xff\xfe" * 10)
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2 and "not UTF-8" in one_line(result.stderr)
    (tree / "fathom.toml").write_text("# " + "x" * (2 << 20) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 2 and "larger than the 1 MiB limit" in one_line(result.stderr)


def good_baseline(tree: Path) -> dict[str, object]:
    result = runner.invoke(app, ["check", "-f", "tools.json", "--save-baseline", "base.json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads((tree / "base.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    "change, said",
    [
        ({"tools": [["not", "an", "object"]]}, "tools[0] is not a JSON object"),
        ({"tools": [{"name": "x", "tokens": [1, 2]}]}, "tools[0].tokens is not an object"),
        ({"tools": [{"name": {"a": 1}}]}, "tools[0] has a name or sha256 that is not a string"),
        ({"tokens": {"openai": "many"}}, "tokens['openai'] is not a whole number"),
        ({"findings": [{"code": "MCP101", "tool": ["x"]}]}, "findings[0].tool is not a string"),
        ({"findings": [7]}, "findings[0] is not an object with a code"),
        ({"score": "high"}, "'score' is not a number from 0 to 100"),
        ({"fathom_baseline": {"nested": True}}, "baseline format not a number"),
    ],
)
def test_a_baseline_with_wrong_inner_types_is_one_line(tree: Path, change: dict[str, object], said: str) -> None:
    data = good_baseline(tree) | change
    (tree / "base.json").write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json"])
    assert result.exit_code == 2 and said in one_line(result.stderr)


def test_a_baseline_nested_deeply_binary_or_nan_is_one_line(tree: Path) -> None:
    base = tree / "base.json"
    base.write_text('{"fathom_baseline": 1, "x": ' + "[" * 50_000 + "]" * 50_000 + "}", encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json"])
    assert result.exit_code == 2 and "nests deeper than 64 levels" in one_line(result.stderr)
    base.write_text('{"fathom_baseline": 1, "x": ' + "[" * 100 + "]" * 100 + "}", encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json"])
    assert result.exit_code == 2 and "nests deeper than 64 levels" in one_line(result.stderr)
    base.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff" * 100)
    result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json"])
    assert result.exit_code == 2 and "not UTF-8" in one_line(result.stderr)
    for constant in ("NaN", "Infinity", "-Infinity", "1e999"):
        base.write_text(json.dumps(good_baseline(tree)).replace('"score": ', f'"score": {constant}, "was": '))
        result = runner.invoke(app, ["check", "-f", "tools.json", "--baseline", "base.json", "--format", "json"])
        assert result.exit_code == 2 and "is not valid JSON" in one_line(result.stderr), constant
        assert "NaN" not in result.stdout


# --- what check writes ------------------------------------------------------------------------------------------


def test_committed_symlinks_never_take_an_output_outside_the_tree(tree: Path) -> None:
    outside = tree.parent / "outside"
    for name in ("badge.svg", "badge.json", "base.json", "out.sarif", "fathom.md"):
        (tree / name).symlink_to(outside / name)
    for args in (
        ["--badge", "badge.svg"],
        ["--save-baseline", "base.json"],
        ["--write", "sarif=out.sarif"],
        ["--write", "markdown=fathom.md"],
    ):
        result = runner.invoke(app, ["check", "-f", "tools.json", *args])
        assert result.exit_code == 2 and "symbolic link" in one_line(result.stderr), args
    (tree / "reports").symlink_to(outside, target_is_directory=True)  # a symlinked folder on the way
    result = runner.invoke(app, ["check", "-f", "tools.json", "--write", "json=reports/check.json"])
    assert result.exit_code == 2 and "symbolic link" in one_line(result.stderr)
    assert list(outside.iterdir()) == []  # nothing written there, nothing half-written here
    assert not [path for path in tree.iterdir() if "fathom-tmp" in path.name]


def test_a_symlink_where_only_the_badges_json_goes_writes_no_badge_at_all(tree: Path) -> None:
    (tree / "badge.json").symlink_to(tree.parent / "outside" / "badge.json")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--badge", "badge.svg"])
    assert result.exit_code == 2 and "endpoint JSON badge.json is a symbolic link" in one_line(result.stderr)
    assert not (tree / "badge.svg").exists() and list((tree.parent / "outside").iterdir()) == []


def test_a_relative_output_leaving_the_tree_is_refused_an_absolute_one_is_written(tree: Path) -> None:
    result = runner.invoke(app, ["check", "-f", "tools.json", "--write", "sarif=../outside/x.sarif"])
    assert result.exit_code == 2 and "outside the working tree" in one_line(result.stderr)
    assert not (tree.parent / "outside" / "x.sarif").exists()
    target = tree.parent / "outside" / "x.sarif"
    result = runner.invoke(app, ["check", "-f", "tools.json", "--write", f"sarif={target}"])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text(encoding="utf-8"))["version"] == "2.1.0"


def test_outputs_replace_regular_files_and_hard_links_stay_apart(tree: Path) -> None:
    (tree / "out.md").write_text("old", encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--write", "markdown=out.md"])
    assert result.exit_code == 0 and (tree / "out.md").read_text(encoding="utf-8").startswith("## Tool list check")


@pytest.mark.parametrize(
    "args, names",
    [
        (["--badge", "tools.svg"], ("--badge's endpoint JSON tools.json", "--tools-file tools.json")),
        (["--save-baseline", "tools.json"], ("--save-baseline tools.json", "--tools-file tools.json")),
        (["--write", "sarif=tools.json"], ("--write sarif tools.json", "--tools-file tools.json")),
        (["--write", "json=./sub/../tools.json"], ("--write json", "--tools-file tools.json")),
        (["--badge", "x.svg", "--save-baseline", "x.json"], ("--badge's endpoint JSON x.json", "--save-baseline")),
        (["--write", "json=a.json", "--write", "sarif=a.json"], ("--write sarif a.json", "--write json a.json")),
        (["--badge", "b.json"], ("--badge's endpoint JSON b.json", "--badge b.json")),
        (["--save-baseline", "fathom.toml"], ("--save-baseline fathom.toml", "config")),
        (["--baseline", "old.json", "--write", "json=old.json"], ("--write json old.json", "--baseline old.json")),
    ],
)
def test_an_output_that_is_an_input_or_another_output_writes_nothing(
    tree: Path, args: list[str], names: tuple[str, str]
) -> None:
    (tree / "sub").mkdir()
    (tree / "fathom.toml").write_text('select = ["MCP"]\n', encoding="utf-8")
    good_baseline(tree)
    (tree / "base.json").rename(tree / "old.json")
    before = {path.name: path.read_bytes() for path in tree.iterdir() if path.is_file()}
    result = runner.invoke(app, ["check", "-f", "tools.json", *args])
    line = one_line(result.stderr)
    assert result.exit_code == 2 and all(name in line for name in names), line
    after = {path.name: path.read_bytes() for path in tree.iterdir() if path.is_file()}
    assert after == before  # nothing written, nothing overwritten


def test_a_hard_link_to_the_tools_file_is_the_tools_file(tree: Path) -> None:
    os.link(tree / "tools.json", tree / "alias.json")
    result = runner.invoke(app, ["check", "-f", "tools.json", "--save-baseline", "alias.json"])
    assert result.exit_code == 2 and "would overwrite --tools-file tools.json" in one_line(result.stderr)
    assert (tree / "tools.json").read_text(encoding="utf-8") == TOOLS


def test_the_bundled_example_is_an_input_too(tree: Path) -> None:
    """``--example`` reads the example shipped in the package: a --write naming it is refused like a --tools-file."""
    from importlib import resources

    example = Path(str(resources.files("scanner") / "examples" / "example-tools.json"))
    original = example.read_bytes()
    try:
        result = runner.invoke(app, ["check", "--example", "--write", f"json={example}"])
        assert result.exit_code == 2 and f"would overwrite --example {example}" in one_line(result.stderr)
        assert example.read_bytes() == original
    finally:
        if example.read_bytes() != original:  # a regression must not leave the package's example overwritten
            example.write_bytes(original)


def test_save_baseline_says_what_it_wrote(tree: Path) -> None:
    result = runner.invoke(app, ["check", "-f", "tools.json", "--save-baseline", "base.json"])
    assert result.exit_code == 0
    assert one_line(result.stderr) == "fathom: wrote the baseline base.json (5 tools, 8 findings, 0 ignored)"
    assert json.loads((tree / "base.json").read_text(encoding="utf-8"))["tools_count"] == 5


# --- standard output ----------------------------------------------------------------------------------------------


def test_output_to_dev_full_or_a_closed_stdout_is_one_line_exit_4(tree: Path) -> None:
    with open("/dev/full", "w") as full:
        code, err = fathom("check", "-f", "tools.json", "--format", "json", cwd=tree, stdout=full.fileno())
    assert code == 4 and "cannot write to standard output: No space left on device" in one_line(err)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    closed = subprocess.run(
        f"'{sys.executable}' -m scanner check -f tools.json >&-",
        shell=True,
        cwd=tree,
        env=env,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )
    assert closed.returncode == 4 and "standard output is closed" in one_line(closed.stderr)
    code, err = fathom("check", "-f", "tools.json", "--write", "json=/dev/full", cwd=tree)
    assert code == 4 and "No space left on device" in one_line(err)


def test_a_fifo_committed_as_fathom_toml_is_refused_not_skipped(tree: Path) -> None:
    (tree.parent / "fathom.toml").write_text('fail-on = "problem"\n', encoding="utf-8")  # a config further up
    os.mkfifo(tree / "fathom.toml")
    code, err = fathom("check", "-f", "tools.json", cwd=tree, timeout=30)
    assert code == 2 and "fathom.toml is a FIFO" in one_line(err)


def test_a_proc_file_as_tools_file_is_refused(tree: Path) -> None:
    result = runner.invoke(app, ["check", "-f", "/proc/self/environ"])
    assert result.exit_code == 2 and "/proc or /sys" in one_line(result.stderr)


def test_a_config_above_the_current_folder_names_a_baseline_beside_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"  # no .git: the working tree is the current folder, below the config
    (project / "server").mkdir(parents=True)
    (project / "server" / "tools.json").write_text(TOOLS, encoding="utf-8")
    monkeypatch.chdir(project)
    assert runner.invoke(app, ["check", "-f", "server/tools.json", "--save-baseline", "base.json"]).exit_code == 0
    (project / "fathom.toml").write_text('baseline = "base.json"\nmax-increase = "0%"\n', encoding="utf-8")
    monkeypatch.chdir(project / "server")
    result = runner.invoke(app, ["check", "-f", "tools.json"])
    assert result.exit_code == 0, result.stderr
    assert "passed --max-increase 0%" in result.stdout
