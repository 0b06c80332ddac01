"""Wherever Fathom is started (issue 48): a nightly from cron as root starts in ``/root`` (0700), a checkout lives
in a ``mktemp -d`` folder. Every child starts in a folder of its own (its HOME), never Fathom's working
directory, so a child's user that cannot enter that folder still runs; and what Fathom's own setup breaks is
said as Fathom's, with the fix, never blamed on the package.

Each case is a real child started the way Fathom starts it: a package from the loopback npm registry
(:func:`scanner.packages.run_package`), a ``--run-commands`` command (:func:`run_command`), with Fathom's working
directory a 0700 folder. Run as root each child runs as a leased user of its own (the case the issue is about);
as an ordinary user the same runs show the child's folder is its HOME.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import anyio
import pytest

from scanner import confine
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings, run_package
from scanner.packages.commands import run_command
from scanner.packages.diagnose import SETUP, classify
from scanner.packages.runners import warning_lines
from scanner.report.census import fault
from scanner.report.nextstep import next_step
from tests.packages.test_package_runs import environ, needs_npx, npm_package, registry, resolve, tool_names

__all__ = ["registry"]  # the module-scoped loopback registry fixture

SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), None)

# A minimal MCP stdio server (system python, no imports of Fathom) whose one tool is named after its working
# directory, as the kernel has it, or "cwd_unreachable" when it cannot even ask.
WHERE = textwrap.dedent(
    r"""
    import json, os, sys

    try:
        here = "cwd:" + os.getcwd()
    except OSError:
        here = "cwd_unreachable"
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "where", "version": "1"}}
        elif msg.get("method") == "tools/list":
            result = {"tools": [{"name": here, "inputSchema": {"type": "object"}}]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()
    """
)


@pytest.fixture
def private_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fathom's working directory: a folder only Fathom's user may enter (``/root``, a ``mktemp -d`` folder)."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    monkeypatch.chdir(folder)
    return folder


@needs_npx
def test_a_package_started_from_a_folder_its_user_cannot_enter_runs_ok(registry, tmp_path, private_cwd):
    """As root the package runs as a leased user that cannot enter ``private_cwd``: npm then failed to spawn its
    shell there (``EACCES``, ``spawn sh``) and the package was recorded ``refused``. It starts in its HOME."""
    env = environ(registry)
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    outcome = anyio.run(run_package, resolve(npm_package("1.0.0"), env), ClientLimits(timeout=90), "rich", settings)
    assert tool_names(outcome) == ["version_1_0_0"]


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_a_command_starts_in_its_own_home_not_in_fathom_folder(tmp_path, private_cwd):
    """A ``--run-commands`` command starts in its own HOME (run as root, the private HOME of its leased user)."""
    assert SYSTEM_PYTHON is not None
    scripts = tmp_path / "scripts"
    scripts.mkdir(mode=0o755)
    script = scripts / "where.py"
    script.write_text(WHERE, encoding="utf-8")
    script.chmod(0o644)
    entry = ServerEntry(
        name="where", transport=Transport.STDIO, command=(SYSTEM_PYTHON, str(script)), env={"PATH": os.defpath}
    )
    outcome = anyio.run(run_command, entry, ClientLimits(timeout=30), "rich")
    [name] = tool_names(outcome)
    assert name != "cwd_unreachable" and name != f"cwd:{private_cwd}"
    if confine.enabled():  # its leased user's private HOME, removed after the run
        assert Path(name.removeprefix("cwd:")).name.startswith("fathom-home-")
    else:  # Fathom's user's own HOME
        assert name == f"cwd:{os.path.realpath(os.path.expanduser('~'))}"


# --- Fathom's own setup is never the package's fault (issue 48 item 2) --------------------------------------

needs_root = pytest.mark.skipif(not confine.enabled(), reason="a user of its own per child needs root on Linux")


def _private_node(tmp_path: Path) -> str:
    """A PATH on which ``npx`` is reachable by every user and ``node``, which its ``#!/usr/bin/env node`` line
    runs, only under a 0700 folder (Node.js installed under ``/root/.nvm``, say)."""
    npx, node = shutil.which("npx"), shutil.which("node")
    assert npx is not None and node is not None
    public = tmp_path / "public-bin"
    public.mkdir(mode=0o755)
    (public / "npx").symlink_to(os.path.realpath(npx))
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    (private / "node").symlink_to(os.path.realpath(node))
    return f"{public}{os.pathsep}{private}"


@needs_root
@needs_npx
def test_a_runner_interpreter_out_of_reach_is_fathom_setup_with_the_fix(registry, tmp_path):
    """npx runs ``node`` through ``env``, and ``node`` lies under a folder the package's user cannot enter:
    ``env: 'node': Permission denied`` was recorded ``refused`` ("wrote outside its HOME"), the package
    blamed. It is ``runner_missing``, this host's, with the fix; said once before the scan too."""
    env = environ(registry, PATH=_private_node(tmp_path))
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    entry = resolve(npm_package("1.0.0"), env)
    lines = warning_lines([entry], settings)
    said = [line for line in lines if "cannot reach node" in line]
    assert len(said) == 1 and "1 entry will be recorded runner_missing" in said[0], lines
    outcome = anyio.run(run_package, entry, ClientLimits(timeout=60), "rich", settings)
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    assert outcome.detail.startswith(SETUP) and "cannot reach node" in outcome.detail
    assert "install it where every user can reach it" in outcome.detail
    assert fault(outcome.outcome.value, outcome.detail) == "host"
    assert next_step(entry.name, outcome.outcome.value, outcome.detail).startswith("Not the package's fault")


@needs_root
@needs_npx
def test_a_runner_the_child_cannot_start_is_said_as_fathom_setup_from_its_own_words(registry, tmp_path, monkeypatch):
    """The same, with the check before the start switched off: the child is started and fails, and what it
    said (``env: 'node': Permission denied``, exit 126) is read as Fathom's setup, never ``refused``."""
    monkeypatch.setattr("scanner.packages.sandbox.out_of_children_reach", lambda command, path: None)
    env = environ(registry, PATH=_private_node(tmp_path))
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    outcome = anyio.run(run_package, resolve(npm_package("1.0.0"), env), ClientLimits(timeout=60), "rich", settings)
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    assert outcome.detail.startswith(SETUP) and "cannot start node" in outcome.detail
    assert fault(outcome.outcome.value, outcome.detail) == "host"


@needs_root
@needs_npx
def test_a_cache_the_child_cannot_traverse_is_fathom_setup_with_the_fix(registry, tmp_path):
    env = environ(registry)
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    settings = PackageSettings(cache_dir=private / "cache", environ=env)
    entry = resolve(npm_package("1.0.0"), env)
    outcome = anyio.run(run_package, entry, ClientLimits(timeout=60), "rich", settings)
    assert outcome.outcome is Outcome.SPAWN_ERROR
    assert outcome.detail.startswith(SETUP) and "cannot reach the package cache" in outcome.detail
    assert fault(outcome.outcome.value, outcome.detail) == "host"
    assert "--cache-dir" in next_step(entry.name, outcome.outcome.value, outcome.detail)


@needs_root
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_a_command_whose_script_its_user_cannot_reach_runs_as_fathom_user_and_says_so(tmp_path):
    """``python3 /root/srv/server.py``: the program is reachable, its script is not. Its leased user could not
    open the script (exited, the command blamed); it runs as Fathom's user, and its outcome says why."""
    assert SYSTEM_PYTHON is not None
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    script = private / "where.py"
    script.write_text(WHERE, encoding="utf-8")
    entry = ServerEntry(
        name="where", transport=Transport.STDIO, command=(SYSTEM_PYTHON, str(script)), env={"PATH": os.defpath}
    )
    outcome = anyio.run(run_command, entry, ClientLimits(timeout=30), "rich")
    assert len(tool_names(outcome)) == 1
    assert outcome.extra["isolation"].startswith(f"none: {script} (in its command) is out of reach")


@needs_root
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system-wide python3")
def test_a_package_script_its_user_cannot_open_is_fathom_setup_not_refused(tmp_path):
    """A package's runner handed a script under a folder its user cannot enter (a checkout in a 0700 folder):
    Python's ``can't open file …: [Errno 13] Permission denied`` (exit 2) was recorded ``refused`` ("wrote
    outside its HOME"). It is Fathom's setup, with the fix."""
    assert SYSTEM_PYTHON is not None
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    script = private / "server.py"
    script.write_text(WHERE, encoding="utf-8")
    with confine.child(private_home=True) as kid:
        assert kid is not None and kid.home is not None
        env = {"PATH": os.defpath, "HOME": str(kid.home)}
        argv, options = confine.start([SYSTEM_PYTHON, str(script)], env)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env, **options)
    assert done.returncode == 2, done.stderr
    entry = ServerEntry(
        name="io.github.t/script",
        transport=Transport.STDIO,
        command=(SYSTEM_PYTHON, str(script)),
        package={"registryType": "pypi", "runner": "uvx", "spec": "script==1.0.0"},
    )
    failed = ScanOutcome(
        outcome=Outcome.EXITED,
        transport="stdio",
        detail="server exited with code 2",
        extra={"exit_code": 2, "stderr_tail": done.stderr.splitlines(), "confined": True},
    )
    outcome = classify(entry, failed)
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    assert outcome.detail.startswith(SETUP) and "cannot open" in outcome.detail
    assert fault(outcome.outcome.value, outcome.detail) == "host"
