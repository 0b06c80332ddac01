"""Issue 8, the registry side: each attack reproduced from crafted files and loopback servers, and shown to fail.

The trust rule for commands, one decode path, malformed URLs, linear JSONC, a total budget for the registry
API, no silent truncation, the address forms that slipped through, and inputs that are not regular files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from registry_support import row
from typer.testing import CliRunner

from scanner.cli import app
from scanner.errors import InputError
from scanner.mcp import ClientLimits
from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.registry import address, load_entries
from scanner.registry.interface import Options
from scanner.registry.loader import _strip_jsonc
from scanner.registry.official import fetch_rows
from scanner.scan.crawl import CrawlSettings, crawl, host_key
from scanner.scan.night import ScanConfig, run_scan

runner = CliRunner()
QUICK = CrawlSettings(concurrency=4, limits=ClientLimits(timeout=5.0, connect_timeout=5.0), retries=0)
ATTACK = "FATHOM_SECRET_SOMEONE_ELSES_TOKEN"
ATTACK_VALUE = "other-servers-token-must-not-leak-41"


def env_dump(out: Path) -> list[str]:
    return ["sh", "-c", f"env > {out}"]


def scan(source: Path, db: Path, **options: object) -> dict[str, str]:
    """Scan ``source`` into a fresh SQLite file; every server's last outcome by name."""
    config = ScanConfig(source=str(source), db_url=f"sqlite:///{db}", crawl=QUICK, **options)  # type: ignore[arg-type]
    run_scan(config)
    with sqlite3.connect(db) as connection:
        query = (
            "SELECT servers.name, scans.outcome, scans.detail FROM scans JOIN servers ON servers.id = scans.server_id"
        )
        return {name: f"{outcome}: {detail}" for name, outcome, detail in connection.execute(query)}


# --- 1. the trust rule ------------------------------------------------------------------------------------------


def test_a_list_file_in_a_registry_directory_runs_nothing(tmp_path: Path) -> None:
    """The attack: a directory of registry files, one of them a simple list with ``sh -c "env > f"``."""
    folder = tmp_path / "registry"
    folder.mkdir()
    out = tmp_path / "pwned.txt"
    (folder / "a.json").write_text(json.dumps({"servers": [row("io.x/a", "1.0.0")]}), encoding="utf-8")
    (folder / "b.json").write_text(
        json.dumps({"servers": [{"name": "evil", "command": env_dump(out)}]}), encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"files of different kinds \(registry: a.json; list: b.json\)"):
        load_entries(str(folder))
    result = runner.invoke(app, ["scan", str(folder), "--db", str(tmp_path / "f.db"), "--run-packages"])
    assert result.exit_code == 2 and "files of different kinds" in result.stderr
    # the list alone, even with --run-packages: listed, skipped with how to opt in, never run
    (folder / "a.json").unlink()
    outcomes = scan(folder, tmp_path / "g.db", run_packages=True)
    assert outcomes == {
        "evil": "skipped: command from a list file: needs --run-commands (commands in input files run only then)"
    }
    assert not out.exists()


def test_a_registry_response_without_metadata_is_not_a_trusted_list(tmp_path: Path) -> None:
    """The attack: a saved API response without ``metadata`` whose first row has ``command``."""
    out = tmp_path / "pwned.txt"
    response = {"servers": [{"name": "evil", "command": env_dump(out)}, row("io.x/a", "1.0.0")]}
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(response), encoding="utf-8")
    entries = {entry.name: entry for entry in load_entries(str(path), run_packages=True)}
    assert entries["evil"].skip == "no remote and no package to run"  # read as a registry row: no command at all
    # the same rows alone have the shape of a list: still nothing runs without --run-commands
    path.write_text(json.dumps({"servers": response["servers"][:1]}), encoding="utf-8")
    result = runner.invoke(app, ["scan", str(path), "--dry-run", "--format", "json", "--run-packages"])
    assert result.exit_code == 0, result.stderr
    (shown,) = json.loads(result.stdout)
    assert shown["command"] == env_dump(out) and "needs --run-commands" in shown["skip"]
    assert scan(path, tmp_path / "f.db", run_packages=True)["evil"].startswith("skipped: command from a list file")
    assert not out.exists()


def test_an_opted_in_command_gets_only_its_declared_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ATTACK, ATTACK_VALUE)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-leak-77")
    monkeypatch.setenv("FATHOM_SECRET_MINE_KEY", "declared-value-12")
    monkeypatch.setenv("BASH_FUNC_x%%", "() { echo pwned; }")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # run as root, the command runs as a user of its own (scanner/confine/users.py)
    out = shared / "env.txt"
    config = {
        "mcpServers": {
            "mine": {"command": "sh", "args": env_dump(out)[1:], "env": {"KEY": "${FATHOM_SECRET_MINE_KEY}"}}
        }
    }
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    outcome = scan(path, tmp_path / "f.db", run_commands=True)["mine"]
    assert not outcome.startswith("skipped"), outcome
    child = dict(line.split("=", 1) for line in out.read_text(encoding="utf-8").splitlines() if "=" in line)
    assert child["KEY"] == "declared-value-12"
    assert child["PATH"] == os.environ["PATH"] and child["PYTHONHASHSEED"] == "0"
    dumped = out.read_text(encoding="utf-8")
    for leaked in (ATTACK, ATTACK_VALUE, "aws-must-not-leak-77", "FATHOM_SECRET_MINE_KEY", "pwned"):
        assert leaked not in dumped
    # TMPDIR: run as root, the command's own private one (beside its own HOME).
    allowed = {"KEY", "PYTHONHASHSEED", "FATHOM_SCAN_MARK", "PWD", "SHLVL", "_", "OLDPWD", "TMPDIR"} | set(
        __import__("scanner.mcp.transports", fromlist=["PASSTHROUGH_ENV"]).PASSTHROUGH_ENV
    )
    assert set(child) <= allowed, set(child) - allowed  # sh adds PWD, SHLVL and _ itself


# --- 2. one decode path ----------------------------------------------------------------------------------------


RAW_NAMES = b'{"servers": [{"name": "surr\\ud800ogate", "url": "http://127.0.0.1:9/mcp"},' + (
    b' {"name": "nul\\u0000name", "url": "http://127.0.0.1:9/mcp"},'
    b' {"name": "bad\xff\xfebytes", "url": "http://127.0.0.1:9/mcp"}]}'
)


def _assert_writable(value: str) -> None:
    value.encode("utf-8")
    assert "\0" not in value


def test_surrogates_nul_and_bad_bytes_in_a_file_never_abort_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_bytes(RAW_NAMES)
    names = [entry.name for entry in load_entries(str(path))]
    assert names == ["surr\ufffdogate", "nul\ufffdname", "bad\ufffd\ufffdbytes"]
    outcomes = scan(path, tmp_path / "f.db")
    assert set(outcomes) == set(names)
    assert all(value.startswith("refused: ") for value in outcomes.values())  # loopback without --allow-private
    with sqlite3.connect(tmp_path / "f.db") as connection:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for values in connection.execute(f"SELECT * FROM {table}"):
                for value in values:
                    if isinstance(value, str):
                        _assert_writable(value)


def test_a_surrogate_in_a_registry_api_page_is_decoded(fake_registry) -> None:
    page = json.dumps({"servers": [row("io.x/a", "1.0.0")], "metadata": {}}).encode("utf-8")
    fake_registry.pages = {"": page.replace(b'"io.x/a"', b'"io.x/\\ud800\\u0000\xff"')}
    entries = load_entries(fake_registry.url)
    assert [entry.name for entry in entries] == ["io.x/\ufffd\ufffd\ufffd"]


@pytest.fixture
def postgres() -> Iterator[str]:
    url = os.environ.get("FATHOM_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip("set FATHOM_TEST_POSTGRES_URL to test PostgreSQL")
    pytest.importorskip("psycopg")
    from sqlalchemy import text

    from scanner.store.engine import create_store_engine

    engine = create_store_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    yield url


def test_nul_in_a_registry_name_is_stored_by_postgresql(tmp_path: Path, postgres: str) -> None:
    path = tmp_path / "list.json"
    path.write_bytes(RAW_NAMES)
    summary = run_scan(ScanConfig(source=str(path), db_url=postgres, crawl=QUICK))
    assert summary.total == 3 and summary.counts == {"refused": 3}


# --- 3. malformed URLs -----------------------------------------------------------------------------------------


def test_a_malformed_url_is_a_skip_reason_everywhere(tmp_path: Path) -> None:
    bad = "http://[::1/mcp"
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"servers": [{"name": "bad", "url": bad}]}), encoding="utf-8")
    server = tmp_path / "server.json"
    server.write_text(
        json.dumps({"name": "io.x/bad", "version": "1", "remotes": [{"type": "streamable-http", "url": bad}]}),
        encoding="utf-8",
    )
    vscode = tmp_path / "mcp.json"
    vscode.write_text(json.dumps({"servers": {"bad": {"type": "http", "url": bad}}}), encoding="utf-8")
    for path in (listed, server, vscode):
        (entry,) = load_entries(str(path))
        assert entry.skip is not None and "Invalid IPv6 URL" in entry.skip, (path, entry.skip)
        result = runner.invoke(app, ["scan", str(path), "--dry-run"])
        assert result.exit_code == 0, result.stderr
        outcome = next(iter(scan(path, tmp_path / f"{path.stem}.db").values()))
        assert outcome.startswith("skipped: ") and "Invalid IPv6 URL" in outcome


def test_the_crawler_survives_a_malformed_url_it_is_handed() -> None:
    entry = ServerEntry(name="bad", transport=Transport.HTTP, url="http://[::1/mcp")
    assert host_key(entry) == "(unparseable URLs)"
    seen: list[ScanOutcome] = []
    anyio.run(crawl, [entry], QUICK, lambda _entry, outcome: seen.append(outcome))
    assert seen[0].outcome is Outcome.REFUSED and "Invalid IPv6 URL" in seen[0].detail


# --- 4. JSONC in linear time -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [60_000, 600_000])
def test_comment_stripping_is_linear(tmp_path: Path, size: int) -> None:
    for text in (
        "/* " * (size // 3),
        '"' * size,
        "// x\n" * (size // 5),
        ",}" * (size // 2),
        "[" + ", /**/" * (size // 6),
    ):
        path = tmp_path / "mcp.json"
        path.write_text(text, encoding="utf-8")
        started = time.perf_counter()
        with pytest.raises(InputError):
            load_entries(str(path))
        # Generous (a loaded machine): quadratic work on 600 000 characters would take hours, not seconds.
        assert time.perf_counter() - started < 30.0, text[:10]


def test_comment_stripping_keeps_strings_and_drops_trailing_commas() -> None:
    text = '{"a": "x // not, a comment /* no */ ,}", // yes\n "b": [1, 2, /* c */ ], /* d */ }'
    assert json.loads(_strip_jsonc(text)) == {"a": "x // not, a comment /* no */ ,}", "b": [1, 2]}
    assert json.loads(_strip_jsonc('{"q": "say \\"hi\\", // ok",}')) == {"q": 'say "hi", // ok'}


# --- 5. registry API memory bounded in total -------------------------------------------------------------------


def test_the_registry_api_is_bounded_in_total_not_per_page(fake_registry) -> None:
    filler = "x" * 200_000
    for page in range(50):  # every page under the page cap, endless in total
        rows = [dict(row(f"io.x/s{page}", "1.0.0"), padding=filler)]
        fake_registry.pages["" if page == 0 else f"c{page}"] = {
            "servers": rows,
            "metadata": {"nextCursor": f"c{page + 1}"},
        }
    options = Options(max_input_bytes=1024 * 1024)
    with pytest.raises(InputError, match=r"over the input limit of 1 MiB for all pages together at page 6"):
        fetch_rows(fake_registry.url, options)
    assert len(fake_registry.requests) == 6  # it stopped there
    result = runner.invoke(app, ["scan", fake_registry.url, "--dry-run", "--max-input-mb", "1"])
    assert result.exit_code == 2
    assert "--max-input-mb raises it" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# --- 6. no silent truncation -----------------------------------------------------------------------------------


def test_a_long_list_is_read_whole_and_an_oversized_one_is_an_error(tmp_path: Path) -> None:
    servers = [{"name": f"s{index}", "url": f"https://s{index}.example.com/mcp"} for index in range(12_000)]
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    assert len(load_entries(str(path))) == 12_000  # the old cap kept 10,000 and said nothing
    config = {"mcpServers": {f"s{index}": {"url": f"https://s{index}.example.com/mcp"} for index in range(12_000)}}
    path.write_text(json.dumps(config), encoding="utf-8")
    assert len(load_entries(str(path))) == 12_000
    result = runner.invoke(app, ["scan", str(path), "--dry-run", "--max-input-mb", "0"])
    assert result.exit_code == 2  # below the option's minimum
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"servers": servers * 3}), encoding="utf-8")
    assert big.stat().st_size > 1024 * 1024
    result = runner.invoke(app, ["scan", str(big), "--dry-run", "--max-input-mb", "1"])
    assert result.exit_code == 2
    assert "larger than the input limit of 1 MiB (--max-input-mb raises it" in result.stderr


def test_a_directory_is_bounded_in_total(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"{index}.json").write_text(
            json.dumps({"servers": [row(f"io.x/{index}", "1")] * 20}), encoding="utf-8"
        )
    size = sum(path.stat().st_size for path in tmp_path.iterdir())
    assert len(load_entries(str(tmp_path), max_input_bytes=size)) == 3
    with pytest.raises(InputError, match="with what was read before, over the input limit"):
        load_entries(str(tmp_path), max_input_bytes=size - 1)


# --- 7. addresses, FIFOs, sizes, the empty source, DNS failures -------------------------------------------------


@pytest.mark.parametrize(
    ("host", "label"),
    [
        ("fec0::1", "site-local"),
        ("2002:7f00:1::", "loopback"),
        ("2002:a00:1::", "private"),
        ("2002:a9fe:a9fe::", "cloud metadata"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("64:ff9b:1::a9fe:a9fe", "cloud metadata"),
        ("64:ff9b:1:a9fe:a9:fe00::", "cloud metadata"),  # RFC 6052 /48: bits 64-71 skipped
        ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata"),  # Teredo, client 169.254.169.254
        ("2002:808:808::1", None),  # 6to4 of 8.8.8.8: public
        ("64:ff9b::808:808", None),
    ],
)
def test_ipv6_forms_that_embed_an_address(host: str, label: str | None) -> None:
    import ipaddress

    assert address.classify(ipaddress.ip_address(host)) == label
    reason = anyio.run(lambda: address.refuse_reason(f"http://[{host}]/mcp", allow_private=True))
    assert (reason is not None) == (label == "cloud metadata"), reason


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "servers.json"
    os.mkfifo(fifo)
    caught: list[BaseException] = []

    def load() -> None:
        try:
            load_entries(str(fifo))
        except BaseException as exc:
            caught.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout=60)  # generous: a loaded machine is slow, not wrong
    if worker.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("a FIFO as input blocked the loader")
    assert isinstance(caught[0], InputError) and "not a regular file" in str(caught[0])


def test_a_huge_file_is_refused_from_its_size_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(1024**3)  # 1 GiB, sparse
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"huge.json: larger than the input limit of 128 MiB"):
            load_entries(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_an_empty_source_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no input given"):
        load_entries("")
    result = runner.invoke(app, ["scan", "", "--db", str(tmp_path / "f.db")])
    assert result.exit_code == 2 and "no input given" in result.stderr
    assert not (tmp_path / "f.db").exists()


def test_a_dns_failure_is_a_connect_error_not_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    async def no_dns(host: str, port: int, timeout_s: float) -> list[object]:
        # a resolver failure cannot be produced on loopback without touching the system's DNS
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(address, "_resolve", no_dns)
    entry = ServerEntry(name="gone", transport=Transport.HTTP, url="https://gone.example.com/mcp")
    seen: list[ScanOutcome] = []
    anyio.run(crawl, [entry], QUICK, lambda _entry, outcome: seen.append(outcome))
    assert seen[0].outcome is Outcome.CONNECT_ERROR
    assert seen[0].detail == "dns: gone.example.com does not resolve ([Errno -2] Name or service not known)"


def test_a_header_value_the_http_client_cannot_send_is_left_out(tmp_path: Path, sdk_http) -> None:
    """A non-ASCII or lone-surrogate header value made every request unbuildable (``connect_error``); left out,
    the server is scanned anonymously, as for any header it cannot send."""
    headers = {"X-Key": "caf\u00e9", "X-Surrogate": "\ud800", "Bad Name": "v", "X-Ok": "fine"}
    path = tmp_path / "list.json"
    path.write_text(
        json.dumps({"servers": [{"name": "sdk", "url": sdk_http.url("/mcp"), "headers": headers}]}), encoding="utf-8"
    )
    (entry,) = load_entries(str(path))
    assert dict(entry.headers) == {"X-Ok": "fine"}
    assert entry.anonymous and entry.secret_header_names == ("X-Key", "X-Surrogate")
    settings = CrawlSettings(limits=QUICK.limits, retries=0, allow_private=True)
    config = ScanConfig(source=str(path), db_url=f"sqlite:///{tmp_path / 'f.db'}", crawl=settings)
    assert run_scan(config).counts == {"ok": 1}


def test_a_non_utf8_environment_value_never_reaches_what_is_stored(tmp_path: Path) -> None:
    """A URL variable from the environment (``os.environ`` holds undecodable bytes as lone surrogates)."""
    from scanner.registry.secrets import var_env_name

    remote = {"type": "streamable-http", "url": "https://{tenant}.example.com/mcp", "variables": {"tenant": {}}}
    server = {"name": "com.example/tenant", "version": "1.0.0", "remotes": [remote]}
    path = tmp_path / "server.json"
    path.write_text(json.dumps(server), encoding="utf-8")
    environ = {var_env_name("com.example/tenant", "tenant"): "t\udcffx", "PATH": "/usr/bin"}
    (entry,) = load_entries(str(path), environ=environ)
    assert entry.url == "https://t\ufffdx.example.com/mcp"
    _assert_writable(entry.url)
