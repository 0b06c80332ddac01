"""One scrubber for every child (issue 33, item 2): a package on a local port, a package over stdio and a config's
command all get what they send back scrubbed of every secret this process holds, in every shape, while the
ordinary values their entry declares (``127.0.0.1``, ``WARNING``) come through unchanged.

The children are real processes (``tests/servers/snoop_child.py``): a Streamable HTTP server on the port Fathom
gives it, the same server over stdio, and one that dies before listening after saying everything on stderr. Each
publishes what a hostile package got hold of: the ``--db`` URL's password (read from Fathom's command line in the
attack), a sibling command's token (read from its ``/proc/<pid>/environ``), its own secret and that secret's base64.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner import confine, scrub
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings
from scanner.registry.localport import PORT_SENTINEL
from scanner.scan.crawl import CrawlSettings, crawl
from scanner.store.engine import create_store_engine


def _reachable(script: Path) -> str:
    """``script``, or, run as root with the checkout out of the children's users' reach (a clone in a
    ``mktemp -d`` folder, issue 48), a copy of it in a folder every user can traverse, removed at exit."""
    if not confine.enabled() or confine.reachable(script):
        return str(script)
    folder = Path(tempfile.mkdtemp(prefix="fathom-test-servers-"))
    folder.chmod(0o755)
    atexit.register(shutil.rmtree, folder, True)
    copy = folder / script.name
    shutil.copy(script, copy)
    copy.chmod(0o644)
    return str(copy)


SCRIPT = _reachable(Path(__file__).parent.parent / "servers" / "snoop_child.py")
# As root each child runs as a user of its own (scanner.confine.users), who cannot reach an interpreter under /root
# (a pyenv, a venv there): the children run on the system's Python then, as a registry's packages would.
PYTHON = (
    sys.executable
    if not confine.enabled() or confine.reachable(Path(sys.executable))
    else next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), sys.executable)
)
OWN = "snoop-own-Token-4f9a2c77e1"
SIBLING = "ghp_SiblingToken0123456789abcdef"
DB_PASSWORD = "Db-pass-7788-zz"


def package(name: str, mode: str, leaks: Path, *, local: bool) -> ServerEntry:
    """A resolved registry package as :mod:`scanner.registry.packages` leaves it (its runner replaced by Python)."""
    declared = {
        "registryType": "pypi",
        "identifier": "snoop",
        "version": "1.0.0",
        "environmentVariables": [
            {"name": "SNOOP_TOKEN", "isSecret": True, "isRequired": True},
            {"name": "SNOOP_HOST", "default": "127.0.0.1"},
            {"name": "SNOOP_LEVEL", "default": "WARNING"},
        ],
    }
    facts: dict[str, Any] = {
        "registryType": "pypi",
        "identifier": "snoop",
        "version": "1.0.0",
        "runner": "uvx",
        "spec": "snoop==1.0.0",
        "pinned": True,
        "memory_limit_mb": 1024,
        "missing_inputs": [],
        "secret_env_names": ["SNOOP_TOKEN"],
    }
    command: tuple[str, ...] = (PYTHON, SCRIPT, mode)
    if local:
        facts["local_port"] = {
            "transport": "streamable-http",
            "url": "http://127.0.0.1:{port}/mcp",
            "declared_url": "http://localhost:{port}/mcp",
            "port_via": "argument --port",
        }
        command += ("--port", PORT_SENTINEL)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "SNOOP_TOKEN": OWN,
        "SNOOP_HOST": "127.0.0.1",
        "SNOOP_LEVEL": "WARNING",
    }
    return ServerEntry(
        name=name,
        transport=Transport.STREAMABLE_HTTP if local else Transport.STDIO,
        command=(*command, str(leaks)),
        env=env,
        version="1.0.0",
        source="test",
        package=facts,
        package_source=declared,
    )


def published(outcome: ScanOutcome) -> str:
    """Everything of an outcome that is stored and rendered."""
    return json.dumps([outcome.tools, outcome.detail, outcome.extra], default=str)


@pytest.mark.timeout(240)
def test_every_child_is_scrubbed_of_every_held_secret_and_keeps_its_ordinary_values(tmp_path: Path) -> None:
    leaks = tmp_path / "leaks.txt"
    leaks.write_text(f"{DB_PASSWORD}\npostgresql://fathom:{DB_PASSWORD}@db/x\n{SIBLING}\n", encoding="utf-8")
    quiet = tmp_path / "nothing.txt"
    quiet.write_text("\n", encoding="utf-8")
    # A sibling: a config's command, its token in its own environment (its name says nothing of a secret).
    sibling = ServerEntry(
        name="sibling",
        transport=Transport.STDIO,
        command=(PYTHON, SCRIPT, "stdio", str(quiet)),
        env={"PATH": os.environ.get("PATH", os.defpath), "GH_CREDENTIAL_VALUE": SIBLING},
    )
    entries = [
        package("snoop-local", "http", leaks, local=True),
        package("snoop-local-dies", "die", leaks, local=True),
        package("snoop-stdio", "stdio", leaks, local=False),
        sibling,
    ]
    # The --db URL this process was given: its password is held from here on (scanner.store.engine).
    create_store_engine(f"postgresql+psycopg://fathom:{DB_PASSWORD}@127.0.0.1:9/fathom").dispose()
    settings = CrawlSettings(
        concurrency=2,
        limits=ClientLimits(timeout=90),
        packages=PackageSettings(cache_dir=tmp_path / "cache", environ={"PATH": os.environ.get("PATH", "")}),
    )
    results: dict[str, ScanOutcome] = {}
    try:
        anyio.run(crawl, entries, settings, lambda entry, outcome: results.__setitem__(entry.name, outcome))
    finally:
        scrub._HELD.difference_update({DB_PASSWORD, f"fathom:{DB_PASSWORD}"})
    assert results["snoop-local"].outcome is Outcome.OK, results["snoop-local"]
    assert results["snoop-stdio"].outcome is Outcome.OK, results["snoop-stdio"]
    assert results["sibling"].outcome is Outcome.OK, results["sibling"]
    assert results["snoop-local-dies"].outcome is not Outcome.OK
    secrets = [OWN, base64.b64encode(OWN.encode()).decode(), DB_PASSWORD, SIBLING]
    for name, outcome in results.items():
        text = published(outcome)
        for secret in secrets:
            assert secret not in text, (name, secret, text)
    for name in ("snoop-local", "snoop-stdio"):
        tools = results[name].tools
        assert tools is not None
        # The mark where the secrets were; the ordinary declared values as they were (token counts unchanged).
        assert scrub.MARK in tools[0]["description"]
        assert "Connects to 127.0.0.1 (log level WARNING)." in tools[0]["description"]
        assert tools[0]["inputSchema"]["properties"]["host"]["default"] == "127.0.0.1"
    died = results["snoop-local-dies"]
    assert scrub.MARK in died.detail and any(scrub.MARK in line for line in died.extra["stderr_tail"])
    # The local-port package's outcome reads as the stdio one's: the same description, the same marks.
    assert results["snoop-local"].tools == results["snoop-stdio"].tools
