"""Children cannot read Fathom's environment, and what a child learns anyway never leaves in its output.

The attack (issue 17, item 1): a stdio server walks its ancestors' ``/proc/<pid>/environ`` and puts what it finds
in a tool description. The server here is real (``tests/servers/hostile_stdio.py --mode read-ancestors``), run
by a real ``fathom`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner import confine
from scanner.scrub import MARK
from tests.servers.launch import hostile_stdio_command

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's"),
]

SECRET = "sk-other-server-7f3a9c1e55"
CLOUD = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path),
        "FATHOM_SECRET_IO_EXAMPLE_OTHER_API_KEY": SECRET,
        "AWS_SECRET_ACCESS_KEY": CLOUD,
    }


def test_a_child_of_fathom_cannot_read_fathoms_environment(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    save = tmp_path / "saved.json"
    command = [
        sys.executable,
        "-m",
        "scanner",
        "check",
        "--format",
        "json",
        "--timeout",
        "60",
        "--save",
        str(save),
        "--",
        *hostile_stdio_command("read-ancestors", "--pid-file", str(seen)),
    ]
    done = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, timeout=110, check=False)
    assert seen.exists(), done.stderr
    read = seen.read_text(encoding="utf-8")
    if read:  # no namespace: Fathom is its parent, whose environment it may not read
        fathom = next(line for line in read.splitlines() if line.startswith(f"{_fathom_pid(read)}: "))
        assert fathom.endswith("PermissionError"), read[:500]
    else:  # its parent is PID 1 of a namespace of its own (issue 42, as root too): Fathom is not there at all
        assert confine.namespaces()[0]
    assert SECRET not in read and CLOUD not in read
    assert SECRET not in done.stdout + done.stderr + save.read_text(encoding="utf-8")


def _fathom_pid(read: str) -> str:
    """The first ancestor listed is the server's parent: the fathom process (the command runs without a shell)."""
    return read.splitlines()[0].split(":", 1)[0]


def test_what_a_child_read_of_other_secrets_is_scrubbed_from_its_tool_list(tmp_path: Path) -> None:
    """Without the guard (a library caller that never called it), the scrubber still knows every secret the
    process holds, not only the ones meant for this server. The child's PID namespace is switched off here
    (as on a host without namespaces): in one, it cannot see its parent at all."""
    seen = tmp_path / "seen.txt"
    program = (
        "import anyio, json, sys\n"
        "import scanner.confine.spawn\n"
        "scanner.confine.spawn.namespaces = lambda: (False, 'switched off by the test')\n"
        "from scanner.mcp import ClientLimits, scan_server\n"
        "from scanner.models import ServerEntry, Transport\n"
        "entry = ServerEntry(name='io.example/this', transport=Transport.STDIO, command=tuple(sys.argv[1:]))\n"
        "outcome = anyio.run(scan_server, entry, ClientLimits(timeout=60))\n"
        "print(json.dumps({'outcome': outcome.outcome.value, 'tools': outcome.tools}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *hostile_stdio_command("read-ancestors", "--pid-file", str(seen))],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert SECRET in seen.read_text(encoding="utf-8")  # the child did read it: the process was not guarded
    result = json.loads(done.stdout)
    assert result["outcome"] == "ok"
    description = result["tools"][0]["description"]
    assert SECRET not in description and CLOUD not in description and MARK in description


def test_the_guard_reports_itself() -> None:
    program = (
        "from scanner.envguard import protect_environment, is_protected\n"
        "print(is_protected(), protect_environment(), is_protected())"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "True", "True"]
