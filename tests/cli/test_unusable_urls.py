"""Two low items of issue 33, each a real ``fathom`` process: a registry URL that cannot be parsed
(``http://[::1``) ended in a traceback; a query given ``sqlite:///missing/x.db`` created the folders and an empty
database, then answered "none". Both are now one line on stderr and exit 2 (README: usage or input error)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner.store.engine import missing_sqlite_file


def fathom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "scanner", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fathom: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("https://registry.example:x/v0", "Port could not be cast"),
        ("https:///v0/servers", "no host"),
    ],
)
def test_an_unparseable_registry_url_is_one_line_exit_2(tmp_path: Path, url: str, said: str) -> None:
    result = fathom("scan", url, "--db", "sqlite:///fathom.db", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    assert "is not a usable URL" in line and said in line
    assert not (tmp_path / "fathom.db").exists()  # bad input fails before a database is created


@pytest.mark.parametrize("command", [["runs"], ["servers"], ["history", "acme/x"], ["findings"], ["report"]])
def test_a_query_on_a_missing_sqlite_url_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    url = "sqlite:///missing/deeper/x.db"
    result = fathom(*command, "--db", url, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert one_line(result) == "fathom: no database at missing/deeper/x.db (fathom scan writes one; --db names another)"
    assert list(tmp_path.iterdir()) == []  # no folder, no empty database
    absolute = tmp_path / "gone" / "x.db"
    result = fathom(*command, "--db", f"sqlite:///{absolute}", cwd=tmp_path)
    assert result.returncode == 2 and str(absolute) in one_line(result)
    assert not (tmp_path / "gone").exists()


def test_which_urls_name_a_missing_file(tmp_path: Path) -> None:
    there = tmp_path / "there.db"
    there.write_bytes(b"")
    assert missing_sqlite_file(f"sqlite:///{there}") is None
    assert missing_sqlite_file(f"sqlite:///{tmp_path}/nope.db") == f"{tmp_path}/nope.db"
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql+psycopg://u:pw@127.0.0.1/db", "not a url"):
        assert missing_sqlite_file(url) is None, url
