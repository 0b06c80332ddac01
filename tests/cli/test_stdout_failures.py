"""Every command's output that cannot be written is one line and exit 4, never a traceback (issue 33's low items:
"output to /dev/full or a closed stdout"); a reader that closes the pipe early (``| head``) ends it quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("command", [["rules"], ["rule", "MCP101"], ["check", "--example"]])
def test_output_to_a_full_disk_is_one_line_and_exit_4(command: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "scanner", *command], stdout=full, stderr=subprocess.PIPE, env=ENV, timeout=60
        )

    lines = done.stderr.decode().splitlines()
    assert done.returncode == 4, done.stderr
    assert lines == ["fathom: cannot write to standard output: No space left on device"]


def test_a_closed_stdout_is_one_line_and_exit_4() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scanner", "rules"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )

    assert done.returncode == 4
    assert done.stderr.decode().splitlines() == [
        "fathom: standard output is closed: nothing can be written (redirect it to a file)"
    ]


def test_a_reader_that_stops_early_ends_it_quietly() -> None:
    reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    done = subprocess.run(
        [sys.executable, "-m", "scanner", "rules", "--format", "csv"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        env=ENV,
        timeout=60,
    )
    reader.stdin.close()
    reader.wait(timeout=30)

    assert b"Traceback" not in done.stderr
    assert done.returncode in (0, 141)  # 0 when the whole catalogue fit in the pipe before head closed it
