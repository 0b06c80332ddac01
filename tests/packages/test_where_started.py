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
import textwrap
from pathlib import Path

import anyio
import pytest

from scanner.mcp import ClientLimits
from scanner.models import ServerEntry, Transport
from scanner.packages import PackageSettings, isolation, run_package
from scanner.packages.commands import run_command
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
    if isolation.enabled():  # its leased user's private HOME, removed after the run
        assert Path(name.removeprefix("cwd:")).name.startswith("fathom-home-")
    else:  # Fathom's user's own HOME
        assert name == f"cwd:{os.path.realpath(os.path.expanduser('~'))}"
