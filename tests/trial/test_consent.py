"""Consent in a real terminal: a remote provider is asked about first, and "no" sends nothing.

The command runs as a subprocess with a pseudo-terminal as its standard input (as a person would run it). The
"remote" provider is ``http://provider.test`` reached through the loopback stub as an HTTP proxy (see
``test_cli.py``), so nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trial import shapes
from tests.trial.conftest import PROVIDER_VARIABLES
from tests.trial.stub import Stub
from tests.trial.test_wire import KEY, TOOLS


def run_in_terminal(stub: Stub, tools: Path, answer: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name not in PROVIDER_VARIABLES}
    # No key: a key never goes over plain http to another host (the "remote" here is http://provider.test).
    env.update({"ANTHROPIC_BASE_URL": "http://provider.test", "HTTP_PROXY": stub.url})
    command = [sys.executable, "-m", "scanner", "try", "--model", "anthropic:claude-sonnet-4-5", "-f", str(tools)]
    master, slave = os.openpty()
    try:
        os.write(master, answer.encode())
        return subprocess.run(
            [*command, "--prompt", "Is the tent in stock?"],
            stdin=slave,
            capture_output=True,
            text=True,
            env=env,
            timeout=90,
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    return path


def test_yes_in_the_terminal_sends(stub: Stub, tools: Path) -> None:
    stub.reply(200, shapes.anthropic_message([shapes.anthropic_tool_use("search_catalog", {"query": "tent"})]))
    done = run_in_terminal(stub, tools, "y\n")
    assert done.returncode == 0, done.stderr
    assert "to Anthropic at http://provider.test/v1/messages, model claude-sonnet-4-5, with no key" in done.stderr
    assert "Send? [y/N]" in done.stderr
    assert [request.target for request in stub.requests] == ["http://provider.test/v1/messages"]
    assert "[ok] search_catalog" in done.stdout
    assert KEY not in done.stdout + done.stderr


def test_no_in_the_terminal_sends_nothing(stub: Stub, tools: Path) -> None:
    done = run_in_terminal(stub, tools, "n\n")
    assert done.returncode == 2
    assert "nothing was sent" in done.stderr
    assert stub.requests == []
