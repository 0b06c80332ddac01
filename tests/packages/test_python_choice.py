"""Python for uv chosen, not inherited: a package whose ``requires-python`` excludes the interpreter uv would
take runs on an installed one that satisfies it, or is ``runner_missing`` naming the version it needs.

Real uvx against wheels the tests build and serve on loopback; the interpreter found is a real one on this
machine (a ``python3.12``/``python3.13`` put on PATH), and the test that needs one skips where there is none.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scanner import confine
from scanner.models import Outcome
from scanner.packages import PackageSettings
from scanner.packages.cache import PackageCache
from tests.packages.local_registry import LocalRegistry, wheel
from tests.packages.test_package_runs import environ, needs_uvx, resolve, run, tool_names

FUTURE = "fathom-test-pyfuture"  # requires a Python no machine has
NEWER = "fathom-test-pynew"  # requires Python >= 3.12 (Fathom's own venv is 3.11 here)


class PythonsRegistry(LocalRegistry):
    """The loopback registry, also serving two wheels that declare ``Requires-Python``."""

    def __init__(self) -> None:
        self.extra_wheels = {
            FUTURE: wheel("1.0.0", FUTURE, ">=3.99"),
            NEWER: wheel("1.0.0", NEWER, f">={sys.version_info.major}.{sys.version_info.minor + 1}"),
        }
        super().__init__()

    def answer(self, path: str) -> tuple[str, bytes] | None:
        for name, (file_name, data) in self.extra_wheels.items():
            if path.split("?", 1)[0].rstrip("/") == f"/simple/{name}":
                digest = hashlib.sha256(data).hexdigest()
                link = f'<a href="{self.base}/files/{file_name}#sha256={digest}">{file_name}</a>'
                return "text/html", f"<!DOCTYPE html><html><body>{link}</body></html>".encode()
            if path == f"/files/{file_name}":
                return "application/octet-stream", data
        return super().answer(path)


@pytest.fixture(scope="module")
def registry() -> Iterator[LocalRegistry]:
    served = PythonsRegistry()
    yield served
    served.close()


def pypi(name: str) -> dict[str, object]:
    return {"registryType": "pypi", "identifier": name, "version": "1.0.0", "transport": {"type": "stdio"}}


def newer_python() -> str | None:
    """An installed interpreter newer than this one (pyenv's, or one on PATH), that really runs."""
    minor = sys.version_info.minor
    candidates = [shutil.which(f"python3.{minor + step}") for step in (1, 2)]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor + 1}.*/bin/python3.{minor + 1}")))
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    return None


@needs_uvx
def test_no_installed_python_satisfies_it_is_runner_missing_naming_the_version(registry, tmp_path):
    env = environ(registry)
    outcome = run(resolve(pypi(FUTURE), env), PackageSettings(cache_dir=tmp_path / "cache", environ=env))
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    assert outcome.detail.startswith("needs Python >=3.99 ("), outcome.detail
    # uv's own word on why there is none, not a guess (issue 36)
    said = "`uv python find >=3.99` said: error: No interpreter found for Python >=3.99"
    assert said in outcome.detail and f"): Because {FUTURE}==1.0.0 requires Python >=3.99" in outcome.detail
    assert outcome.extra["runner_version"].startswith("uvx ")


@needs_uvx
def test_a_broken_interpreter_on_path_is_named_with_uv_own_error(registry, tmp_path):
    """The host of issue 36: pyenv's shims on PATH, whose python3.12 exits 127 (no global 3.12): uv's error about
    the shim is the detail, not "no installed interpreter satisfies it"."""
    shims = tmp_path / "shims"
    shims.mkdir()
    name = f"python3.{sys.version_info.minor + 1}"
    shim = shims / name
    shim.write_text(f"#!/bin/sh\necho 'pyenv: {name}: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    env = environ(registry)
    env["PATH"] = f"{env['PATH']}{os.pathsep}{shims}"
    outcome = run(resolve(pypi(NEWER), env), PackageSettings(cache_dir=tmp_path / "cache", environ=env))
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    assert "no installed interpreter satisfies it" not in outcome.detail
    assert "Failed to inspect Python interpreter" in outcome.detail, outcome.detail
    assert f"pyenv: {name}: command not found" in outcome.detail


@needs_uvx
def test_an_installed_python_that_satisfies_it_is_chosen_and_remembered(registry, tmp_path):
    newer = newer_python()
    if newer is None:
        pytest.skip("no Python newer than this one is installed")
    if confine.enabled() and not confine.reachable(Path(newer)):
        pytest.skip("run as root, packages run as users of their own, and the newer Python is out of their reach")
    pythons = tmp_path / "pythons"
    pythons.mkdir()
    name = f"python3.{sys.version_info.minor + 1}"
    (pythons / name).symlink_to(newer)
    env = environ(registry)
    env["PATH"] = f"{env['PATH']}{os.pathsep}{pythons}"  # after Fathom's own: uv takes Fathom's first
    settings = PackageSettings(cache_dir=tmp_path / "cache", environ=env)
    entry = resolve(pypi(NEWER), env)
    first = run(entry, settings)
    assert tool_names(first) == ["version_1_0_0"]
    assert first.extra["python"].startswith(f"3.{sys.version_info.minor + 1}.")
    assert first.extra["python_required"] == f">=3.{sys.version_info.minor + 1}"
    assert (
        PackageCache(tmp_path / "cache").state(entry)["python"] == str(pythons / name)
        or Path(PackageCache(tmp_path / "cache").state(entry)["python"]).exists()
    )
    second = run(entry, settings)  # the next night starts on the remembered interpreter
    assert tool_names(second) == ["version_1_0_0"]
    assert second.extra["python"] == first.extra["python"] and "python_required" not in second.extra


@needs_uvx
def test_as_root_a_python_under_roots_private_home_is_named_with_what_to_do(registry, tmp_path):
    """Issue 46: run as root, runner_missing said to put a Python on PATH when one was there, under root's 0700
    HOME, where a package's own user cannot reach it (rightly ignored): say that, and where one would count."""
    newer = newer_python()
    if not confine.enabled() or newer is None or confine.reachable(Path(newer)):
        pytest.skip("needs root and a newer Python only root can reach (pyenv's under /root)")
    env = environ(registry)
    env["PATH"] = f"{env['PATH']}{os.pathsep}{Path(newer).parent}"  # on PATH, as the user had it
    outcome = run(resolve(pypi(NEWER), env), PackageSettings(cache_dir=tmp_path / "cache", environ=env))
    assert outcome.outcome is Outcome.RUNNER_MISSING, (outcome.outcome, outcome.detail)
    said = f"found only an interpreter the package's own user cannot reach: {newer}, under /root, private to root"
    assert said in outcome.detail, outcome.detail

    from scanner.report.nextstep import next_step

    step = next_step("io.github.x/y", outcome.outcome.value, outcome.detail)
    assert "on PATH" not in step and "cannot reach that interpreter" in step
    assert "UV_PYTHON_INSTALL_DIR=<cache>/uv-python uv python install 3." in step
