"""Which Python a PyPI package runs on, chosen rather than inherited, and the runners' versions.

``uvx`` takes the first interpreter it finds (often Fathom's own virtual environment). When that one does not
satisfy a package's ``requires-python`` (uv says "the current Python version (3.11.7) does not satisfy
Python>=3.12"), :func:`find_python` asks uv for an *installed* interpreter that does (``uv python find``, which
searches uv's managed interpreters in the cache's ``uv-python`` folder and every ``python3.X`` on ``PATH``;
nothing is downloaded), and the sandbox runs the package again with ``uvx --python <that interpreter>``. With
none installed the entry is ``runner_missing`` naming the version needed. The choice is remembered per
package@version, so later nights start on the right interpreter at once. When ``uv python find`` finds none,
or finds one that does not run (a broken pyenv shim), :func:`why_no_python` puts uv's own error in the entry's
detail instead of a guess. Run as root, only an interpreter the package's own user can reach counts
(:mod:`scanner.confine.users`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from scanner import confine
from scanner.models import ScanOutcome
from scanner.packages.diagnose import MAX_DETAIL, normalise, uv_error

FIND_TIMEOUT_S = 30
# What the last ``uv python find`` of a requirement said when it found nothing usable, by (requirement, PATH).
_FIND_ERRORS: dict[tuple[str, str], str] = {}


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
    except (OSError, subprocess.SubprocessError) as exc:
        _FIND_ERRORS[(requirement, env.get("PATH") or "")] = f"uv python find did not run: {exc}"
        return None
    path = found.stdout.strip().splitlines()[-1] if found.returncode == 0 and found.stdout.strip() else ""
    if not path:
        said = _uv_said(found.stderr) or f"uv python find exited with code {found.returncode}"
        _FIND_ERRORS[(requirement, env.get("PATH") or "")] = said
        return None
    if confine.enabled() and not confine.reachable(Path(path)):
        # Run as root, the package's own user could not start it (root's own 0700 HOME, say): say so, and where
        # an interpreter would count, instead of "put a Python on PATH" when one is there.
        private = _private_folder(Path(path))
        where = f", under {private}, private to root" if private else ""
        _FIND_ERRORS[(requirement, env.get("PATH") or "")] = f"{UNREACHABLE} {path}{where}"
        return None
    version = python_version(path, settings)
    if not version:
        _FIND_ERRORS[(requirement, env.get("PATH") or "")] = f"uv python find gave {path}, which does not run"
    return (path, version) if version else None


# Run as root, an interpreter counts only where a package's own user can reach it (the next step says where).
UNREACHABLE = "found only an interpreter the package's own user cannot reach:"


def _private_folder(path: Path) -> Path | None:
    """The first folder above ``path`` (links followed) that others cannot search, or None."""
    import stat

    for parent in reversed(Path(os.path.realpath(path)).parents):
        try:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return parent
        except OSError:
            return parent
    return None


def _uv_said(stderr: str) -> str | None:
    lines = stderr.splitlines()
    return uv_error(lines) or next((line.strip() for line in reversed(lines) if line.strip()), None)


def why_no_python(outcome: ScanOutcome, requirement: str, env: Mapping[str, str]) -> ScanOutcome:
    """``outcome`` (``runner_missing``: no Python satisfying ``requirement``) with what ``uv python find`` said
    in place of "no installed interpreter satisfies it", so a broken interpreter on this host is named as uv
    named it; unchanged when nothing was recorded."""
    said = _FIND_ERRORS.get((requirement, env.get("PATH") or ""))
    if not said:
        return outcome
    text = said if said.startswith(UNREACHABLE) else f"`uv python find {requirement}` said: {normalise(said)}"
    guess = "no installed interpreter satisfies it"
    detail = outcome.detail.replace(guess, text) if guess in outcome.detail else f"{outcome.detail} ({text})"
    return replace(outcome, detail=detail[:MAX_DETAIL], extra={**outcome.extra, "python_find_error": said[:500]})


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
