"""Which Python a PyPI package runs on, chosen rather than inherited, and the runners' versions.

``uvx`` takes the first interpreter it finds (often Fathom's own virtual environment). When that one does not
satisfy a package's ``requires-python`` (uv says "the current Python version (3.11.7) does not satisfy
Python>=3.12"), :func:`find_python` asks uv for an *installed* interpreter that does (``uv python find``, which
searches uv's managed interpreters in the cache's ``uv-python`` folder and every ``python3.X`` on ``PATH``;
nothing is downloaded), and the sandbox runs the package again with ``uvx --python <that interpreter>``. With
none installed the entry is ``runner_missing`` naming the version needed. The choice is remembered per
package@version, so later nights start on the right interpreter at once. Run as root, only an interpreter the
package's own user can reach counts (:mod:`scanner.isolation`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from scanner import isolation

FIND_TIMEOUT_S = 30


def find_python(requirement: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(path, version) of an installed interpreter satisfying ``requirement`` (``>=3.12``), or None."""
    uv = shutil.which("uv", path=env.get("PATH") or os.defpath)
    if uv is None:
        return None
    settings = {**env, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    try:
        found = subprocess.run(
            [uv, "python", "find", "--no-project", requirement],
            capture_output=True,
            text=True,
            timeout=FIND_TIMEOUT_S,
            check=False,
            env=settings,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = found.stdout.strip().splitlines()[-1] if found.returncode == 0 and found.stdout.strip() else ""
    if not path:
        return None
    if isolation.enabled() and not isolation.reachable(Path(path)):
        return None  # run as root, the package's own user could not start it (root's own 0700 HOME, say)
    version = python_version(path, settings)
    return (path, version) if version else None


def python_version(path: str, env: Mapping[str, str]) -> str | None:
    try:
        done = subprocess.run(
            [path, "-I", "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            timeout=FIND_TIMEOUT_S,
            check=False,
            env=dict(env),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def with_python(command: tuple[str, ...], path: str) -> tuple[str, ...]:
    """``uvx ... spec`` as ``uvx --python PATH ... spec`` (a runner option goes before the package)."""
    if not command or os.path.basename(command[0]) != "uvx" or "--python" in command:
        return command
    return (command[0], "--python", path, *command[1:])


@functools.lru_cache(maxsize=8)
def runner_version(runner_path: str) -> str | None:
    """``uvx --version`` / ``npx --version`` / ``docker --version``, once per process (recorded per run)."""
    try:
        done = subprocess.run(
            [runner_path, "--version"], capture_output=True, text=True, timeout=FIND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    return line[:100] or None
