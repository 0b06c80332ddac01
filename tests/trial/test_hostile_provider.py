"""``fathom try`` under the same limits as the MCP client (issue 17, items 8-11 and the low items of ``try``).

Each attack is reproduced against a real loopback server: the provider stub, or a raw socket server for a drip.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.errors import InputError
from scanner.providers.api import Call, Limits, MalformedAnswer, ModelApiError, send
from scanner.providers.openai_api import OpenAICompatibleApi
from scanner.trial.model import resolve
from tests.servers.hostile_http import BOMB
from tests.trial.stub import Stub

pytestmark = pytest.mark.timeout(300)

KEY = "sk-test-9f8e7d6c5b4a39281706"
PROMPT = "Is the two-person tent in stock?"
TOOLS = [{"name": "search_catalog", "description": "Search.", "inputSchema": {"type": "object"}}]
runner = CliRunner()


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    return path


def _call(url: str) -> Call:
    return Call(
        url=url + "/v1/chat/completions",
        headers={},
        auth_headers={"Authorization": f"Bearer {KEY}"},
        body={},
        key_env="K",
    )


def _reply(content: str = "", calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls is not None:
        message["tool_calls"] = calls
    return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}


def test_a_gzip_gzip_bomb_is_capped_while_it_inflates(stub: Stub) -> None:
    """Item 8: a 1,827-byte ``gzip, gzip`` answer took 2.2 GB before the cap (httpx's own decoder)."""
    stub.reply(200, raw=BOMB, headers={"Content-Encoding": "gzip, gzip", "Content-Type": "application/json"})
    tracemalloc.start()
    try:
        with pytest.raises(MalformedAnswer, match="larger than 8 MiB"):
            send(OpenAICompatibleApi(), _call(stub.url), Limits(timeout=60, retries=0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, peak


class _Drip:
    """A raw HTTP server that answers 200 with a long body, one byte every 0.2 s, forever."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            try:
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                )
                while not self.stop.is_set():
                    connection.sendall(b" ")
                    time.sleep(0.2)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def test_the_timeout_bounds_the_attempt_not_each_read() -> None:
    """Item 9: one byte a second ran past 90 s under ``--timeout 3``: the timeout bounded each read."""
    drip = _Drip()
    try:
        started = time.monotonic()
        with pytest.raises(ModelApiError, match="did not answer within 2 s"):
            send(OpenAICompatibleApi(), _call(drip.url), Limits(timeout=2, retries=0))
        assert time.monotonic() - started < 60  # generous: the drip never ends, an unbounded read never would
    finally:
        drip.close()


def test_a_yaml_alias_bomb_is_refused_not_expanded(tmp_path: Path, tools_file: Path) -> None:
    """Item 10: a 578-byte alias bomb in ``--cases`` ran 107 s, took 2.8 GB and died with a traceback."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        lines.append(f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
    lines.append("cases: [{prompt: x, tool: search_catalog, arguments: {q: *i}}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert bomb.stat().st_size < 1000
    result = runner.invoke(
        app, ["try", "--model", "m", "--base-url", "http://127.0.0.1:9", "-f", str(tools_file), "--cases", str(bomb)]
    )
    assert result.exit_code == 2, result.output
    assert "aliases (*name) are not read" in result.stderr and "Traceback" not in result.output


def test_a_fifo_as_cases_is_refused_not_waited_on(tmp_path: Path, tools_file: Path) -> None:
    fifo = tmp_path / "cases.fifo"
    os.mkfifo(fifo)
    result = runner.invoke(
        app, ["try", "--model", "m", "--base-url", "http://127.0.0.1:9", "-f", str(tools_file), "--cases", str(fifo)]
    )
    assert result.exit_code == 2, result.output
    assert "not a regular file" in result.stderr


def test_no_key_goes_to_a_compatible_server_unless_asked(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    """Item 11: OPENAI_API_KEY was sent to any OpenAI-compatible --base-url, with no word of it in the consent."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    stub.reply(200, _reply("no tool"))
    args = ["try", "--model", "local", "--base-url", stub.url + "/v1", "-f", str(tools_file), "--prompt", PROMPT]
    assert runner.invoke(app, args).exit_code == 0
    assert "authorization" not in stub.requests[-1].headers
    stub.reply(200, _reply("no tool"))
    assert runner.invoke(app, [*args, "--key-env", "OPENAI_API_KEY"]).exit_code == 0
    assert stub.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    missing = runner.invoke(app, [*args, "--key-env", "NO_SUCH_VARIABLE_X"])
    assert missing.exit_code == 4 and "NO_SUCH_VARIABLE_X" in missing.stderr


def test_a_key_never_goes_over_plain_http_to_another_host() -> None:
    environ = {"OPENAI_API_KEY": KEY}
    with pytest.raises(InputError, match=r"over plain http to 192\.168\.1\.5"):
        resolve("openai:gpt-4o", "http://192.168.1.5:8000/v1", environ=environ)
    with pytest.raises(InputError, match="over plain http"):
        resolve("local", "http://gpu-box.lan:8000/v1", environ=environ, key_env="OPENAI_API_KEY")
    assert resolve("local", "http://127.0.0.1:8000/v1", environ=environ, key_env="OPENAI_API_KEY").key == KEY
    assert resolve("local", "http://gpu-box.lan:8000/v1", environ=environ).key is None  # no key: http is fine


def test_the_consent_line_says_which_key_is_sent(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    args = ["try", "--model", "openai:gpt-4o", "--base-url", "https://gateway.example/v1", "-f", str(tools_file)]
    result = runner.invoke(app, [*args, "--prompt", PROMPT], input="n\n")
    assert "with the key in OPENAI_API_KEY" in result.stderr, result.output
    local = ["try", "--model", "m", "--base-url", "https://models.example/v1", "-f", str(tools_file)]
    assert "with no key" in runner.invoke(app, [*local, "--prompt", PROMPT], input="n\n").stderr


def test_a_localhost_subdomain_is_not_taken_for_this_machine() -> None:
    """Low item: ``*.localhost`` was assumed loopback without resolving (it skipped try's consent)."""
    assert not resolve("m", "http://metadata.localhost/v1", environ={}).loopback
    assert resolve("m", "http://localhost:11434/v1", environ={}).loopback


def test_every_echo_of_the_key_is_redacted(stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """Low item: a provider's echo of the key reached stdout, --save and the error code field."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    shapes = [KEY, quote(KEY, safe=""), base64.b64encode(KEY.encode()).decode().rstrip("="), KEY[:14]]
    echo = " ".join(shapes)
    answer = {
        "content": [{"type": "text", "text": f"your key is {echo}"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "model": "m",
    }
    stub.reply(200, answer)
    save = tmp_path / "t.json"
    args = ["try", "--model", "anthropic:m", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT]
    result = runner.invoke(app, [*args, "--format", "json", "--save", str(save)])
    assert result.exit_code == 0, result.output
    stub.reply(401, {"type": "error", "error": {"type": f"code-{KEY}", "message": f"bad key {echo}"}})
    failed = runner.invoke(app, args)
    assert failed.exit_code == 5
    printed = result.output + save.read_text(encoding="utf-8") + failed.output
    for shape in shapes:
        assert shape not in printed, shape


def test_output_is_strict_json(stub: Stub, tools_file: Path, tmp_path: Path) -> None:
    """Low item: a bare NaN or Infinity from the provider came out as NaN in ``try`` JSON."""
    body = json.dumps(_reply("fine")).replace('"usage": {}', '"usage": {"prompt_tokens": NaN, "x": Infinity}')
    stub.reply(200, raw=body.encode(), headers={"Content-Type": "application/json"})
    save = tmp_path / "t.json"
    args = ["try", "--model", "m", "--base-url", stub.url + "/v1", "-f", str(tools_file), "--prompt", PROMPT]
    result = runner.invoke(app, [*args, "--format", "json", "--save", str(save)])
    assert result.exit_code == 0, result.output

    def refuse(word: str) -> None:
        raise ValueError(word)

    json.loads(result.stdout, parse_constant=refuse)
    json.loads(save.read_text(encoding="utf-8"), parse_constant=refuse)


@pytest.mark.parametrize(
    ("model", "body"),
    [
        ("m", _reply("x", calls=5)),  # type: ignore[arg-type]
        ("gemini:g", {"error": {"code": 400, "message": "no", "status": "INVALID_ARGUMENT", "details": 7}}),
    ],
)
def test_odd_shapes_are_one_line_not_a_traceback(stub: Stub, tools_file: Path, model: str, body: Any) -> None:
    """Low item: a non-list ``tool_calls`` or Gemini ``details`` ended in a traceback."""
    stub.reply(400 if "error" in body else 200, body)
    base = stub.url + ("/v1" if model == "m" else "")
    env = {"GEMINI_API_KEY": KEY}
    result = runner.invoke(
        app, ["try", "--model", model, "--base-url", base, "-f", str(tools_file), "--prompt", PROMPT], env=env
    )
    assert result.exit_code == 5, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


def test_a_broken_base_url_is_one_line(tools_file: Path) -> None:
    result = runner.invoke(
        app, ["try", "--model", "m", "--base-url", "http://[::1/v1", "-f", str(tools_file), "--prompt", "x"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


def test_checking_an_answer_has_a_budget(stub: Stub, tools_file: Path) -> None:
    """Low item: an answer of 50,000 calls had no total checking budget (over 300 s)."""
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": "search_catalog", "arguments": "{}"}}
        for n in range(50_000)
    ]
    stub.reply(200, _reply("", calls=calls))
    args = ["try", "--model", "m", "--base-url", stub.url + "/v1", "-f", str(tools_file), "--prompt", PROMPT]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    (trial,) = json.loads(result.stdout)["trials"]
    assert len(trial["calls"]) == 64 and trial["unchecked_calls"] == 50_000 - 64 and not trial["passed"]
