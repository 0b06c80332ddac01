"""``fathom try`` end to end: the command against loopback provider stubs, real tool sources, real files.

A "remote" provider is a non-loopback host name (``provider.test``, reserved, never resolvable) reached through
an HTTP proxy that is the loopback stub: the command treats it as remote (consent), while every byte stays on
127.0.0.1 and the stub sees the absolute URL the request was meant for.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scanner import providers
from scanner.cli import app
from tests.trial import shapes
from tests.trial.stub import Stub
from tests.trial.test_wire import KEY, PROMPT, TOOLS

runner = CliRunner()


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    return path


def invoke(*args: str, input: str | None = None) -> Any:
    return runner.invoke(app, ["try", *args], input=input)


def anthropic_call(name: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return shapes.anthropic_message([shapes.anthropic_tool_use(name, arguments)], **kwargs)


def _valid_local_reply() -> dict[str, Any]:
    return shapes.openai_completion(
        {"content": None, "tool_calls": [shapes.openai_tool_call("search_catalog", '{"query": "two-person tent"}')]}
    )


def test_local_openai_compatible_server_needs_no_key_and_no_consent(stub: Stub, tools_file: Path) -> None:
    stub.reply(
        200,
        shapes.openai_completion(
            {"content": None, "tool_calls": [shapes.openai_tool_call("search_catalog", '{"query": "two-person tent"}')]}
        ),
    )
    result = invoke("--model", "llama3.2:3b", "--base-url", stub.url + "/v1", "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 0, result.output
    (request,) = stub.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers
    assert request.body["model"] == "llama3.2:3b"
    assert request.body["max_tokens"] == 1024 and "max_completion_tokens" not in request.body
    assert request.body["tools"] == providers.provider_view("openai", TOOLS)
    assert request.body["tool_choice"] == "auto"
    assert request.body["messages"] == [{"role": "user", "content": PROMPT}]
    out = result.stdout
    assert '[ok] search_catalog {"query": "two-person tent"}' in out
    assert "price unknown (price unknown: a model on this machine)" in out
    estimate = providers.list_tokens("openai", TOOLS)
    assert f"Fathom's estimate for the tool list: {estimate.tokens:,} tokens a turn [{estimate.method}]" in out
    assert "640 in, 31 out" in out
    stub.reply(200, _valid_local_reply())
    strict = invoke(
        "--model", "llama3.2:3b", "--base-url", stub.url + "/v1", "-f", str(tools_file), "--prompt", PROMPT, "--strict"
    )
    assert strict.exit_code == 0, strict.output


def test_argument_problems_name_the_pointer_expected_and_got(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    stub.reply(200, anthropic_call("search_catalog", {"max_results": "ten", "in_stock": "yes"}))
    result = invoke(
        "--model", "anthropic:claude-sonnet-4-5", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "[x] search_catalog" in out
    assert '/in_stock: expected type ["boolean", "null"], got "yes"' in out
    assert '/max_results: expected type "integer", got "ten"' in out
    assert "/query: expected a required argument, got <missing>" in out
    assert stub.requests[0].headers["x-api-key"] == KEY
    assert KEY not in result.output


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (anthropic_call("delete_everything", {}), "called 'delete_everything', which is not in the list"),
        (
            shapes.anthropic_message([{"type": "text", "text": "I don't know."}], "end_turn"),
            "answered in text, no call",
        ),
        (shapes.anthropic_message([], "refusal"), "refused"),
        (
            shapes.anthropic_message([{"type": "text", "text": "Let me"}], "max_tokens", output_tokens=5),
            "truncated at max tokens",
        ),
    ],
)
def test_outcomes_are_said_plainly(
    stub: Stub, tools_file: Path, monkeypatch: Any, reply: dict[str, Any], said: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    stub.reply(200, reply)
    stub.reply(200, reply)
    result = invoke(
        "--model", "anthropic:claude-sonnet-4-5", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT
    )
    assert result.exit_code == 0, result.output
    assert said in result.stdout
    strict = invoke(
        "--model", "anthropic:m", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT, "--strict"
    )
    assert strict.exit_code == 1  # a plain prompt is missed unless its first call is listed and valid


def test_json_reports_provider_tokens_beside_fathoms_estimate_and_the_price(
    stub: Stub, tools_file: Path, monkeypatch: Any
) -> None:
    from decimal import Decimal

    from genai_prices import Usage, calc_price

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}, input_tokens=1200, output_tokens=40))
    result = invoke(
        "--model", "anthropic:claude-sonnet-4-5", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT,
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tool_list_estimate"]["tokens"] == providers.list_tokens("anthropic", TOOLS).tokens
    assert data["usage"] == {"input_tokens": 1200, "output_tokens": 40, "method": "as reported by Anthropic"}
    expected = calc_price(
        Usage(input_tokens=1200, output_tokens=40), model_ref="claude-sonnet-4-5", provider_id="anthropic"
    )
    assert Decimal(data["price_usd"]) == expected.total_price
    (trial,) = data["trials"]
    assert trial["price_method"].startswith("genai-prices ")
    assert trial["calls"][0] == {
        "tool": "search_catalog",
        "arguments": {"query": "tent"},
        "in_list": True,
        "valid": True,
        "arguments_error": None,
        "schema_problem": None,
        "errors": [],
        "expectation_errors": [],
    }


def test_unknown_model_has_no_price(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    stub.reply(200, shapes.openai_completion({"content": "Yes."}, "stop"))
    result = invoke(
        "--model", "openai:no-such-model-7", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT
    )
    assert result.exit_code == 0, result.output
    assert "price unknown (price unknown: genai-prices" in result.stdout
    assert "has no price for 'no-such-model-7'" in result.stdout


CASES_YAML = """\
cases:
  - name: tent stock
    prompt: Is the two-person tent in stock?
    tool: search_catalog
    arguments: {query: two-person tent}
  - name: order
    prompt: Order the tent for me.
    tool: place_order
  - name: chit-chat
    prompt: Hello!
    tool: null
"""


def _case_replies(stub: Stub) -> None:
    # tent stock: right twice, values right once; order: wrong tool twice; chit-chat: text twice.
    stub.reply(200, anthropic_call("search_catalog", {"query": "two-person tent"}))
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    stub.reply(200, shapes.anthropic_message([{"type": "text", "text": "Hi!"}], "end_turn"))
    stub.reply(200, shapes.anthropic_message([{"type": "text", "text": "Hello."}], "end_turn"))


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
def test_cases_repeat_table_score_and_strict(
    stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any, suffix: str
) -> None:
    import yaml

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    cases = tmp_path / f"cases{suffix}"
    if suffix == ".yaml":
        cases.write_text(CASES_YAML, encoding="utf-8")
    else:
        items = yaml.safe_load(CASES_YAML)["cases"]
        cases.write_text("\n".join(json.dumps(item) for item in items) + "\n", encoding="utf-8")
    _case_replies(stub)
    args = ["--model", "anthropic:claude-sonnet-4-5", "--base-url", stub.url, "-f", str(tools_file)]
    result = invoke(*args, "--cases", str(cases), "--repeat", "2", "--strict")
    assert result.exit_code == 1, result.output
    assert [r.body["messages"][0]["content"] for r in stub.requests] == [
        "Is the two-person tent in stock?",
        "Is the two-person tent in stock?",
        "Order the tent for me.",
        "Order the tent for me.",
        "Hello!",
        "Hello!",
    ]
    lines = result.stdout.splitlines()  # the table comes after each case's own lines, which start the same way
    rows = {
        name: [line for line in lines if line.startswith(name)][-1] for name in ("tent stock", "order", "chit-chat")
    }
    assert rows["tent stock"].split()[-4:] == ["2/2", "2/2", "1/2", "1/2"]  # right, valid, values, passed
    order = rows["order"].split()  # the wrong tool: no valid call of the expected one
    assert order[1] == "place_order" and "search_catalog" in order and order[-3:] == ["0/2", "0/2", "0/2"]
    assert rows["chit-chat"].split()[-3:] == ["2/2", "2/2", "2/2"]
    assert "score: 50% of 6 trial(s) passed; 2 of 3 case(s) missed" in result.stdout
    assert 'case expects /query: expected "two-person tent", got "tent"' in result.stdout


def test_strict_passes_when_every_case_passes(stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- {prompt: 'Is the tent in stock?', tool: search_catalog, arguments_schema: {required: [query]}}\n",
        encoding="utf-8",
    )
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    result = invoke(
        "--model",
        "anthropic:m",
        "--base-url",
        stub.url,
        "-f",
        str(tools_file),
        "--cases",
        str(cases),
        "--strict",
        "--format",
        "markdown",
    )
    assert result.exit_code == 0, result.output
    assert "| case | expected | chosen | right | valid | values | passed |" in result.stdout
    assert "&lt;functions&gt; block" in result.stdout and "<functions>" not in result.stdout
    assert "| case 1 | search\\_catalog | search\\_catalog 1 | 1/1 | 1/1 | 1/1 | 1/1 |" in result.stdout


def test_a_case_naming_a_tool_not_in_the_list_sends_nothing(
    stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    cases = tmp_path / "cases.yaml"
    cases.write_text("- {prompt: hi, tool: search_catalogue}\n", encoding="utf-8")
    result = invoke("--model", "anthropic:m", "--base-url", stub.url, "-f", str(tools_file), "--cases", str(cases))
    assert result.exit_code == 2
    assert "expects tool 'search_catalogue', which is not in the list" in result.stderr
    assert stub.requests == []


def test_save_writes_a_transcript_without_the_key(
    stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    stub.reply(200, shapes.gemini_response([{"functionCall": {"name": "search_catalog", "args": {"query": "tent"}}}]))
    saved = tmp_path / "transcript.json"
    result = invoke(
        "--model",
        "gemini:gemini-2.5-flash",
        "--base-url",
        stub.url,
        "-f",
        str(tools_file),
        "--prompt",
        PROMPT,
        "--save",
        str(saved),
    )
    assert result.exit_code == 0, result.output
    text = saved.read_text(encoding="utf-8")
    assert KEY not in text
    transcript = json.loads(text)
    assert transcript["kind"] == "fathom-try-transcript" and transcript["error"] is None
    (exchange,) = transcript["exchanges"]
    assert exchange["request"]["url"] == f"{stub.url}/v1beta/models/gemini-2.5-flash:generateContent"
    assert exchange["request"]["body"] == stub.requests[0].body
    assert "x-goog-api-key" not in {name.lower() for name in exchange["request"]["headers"]}
    assert exchange["response"]["status"] == 200
    assert (
        exchange["response"]["body"]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "search_catalog"
    )
    assert stub.requests[0].headers["x-goog-api-key"] == KEY


def test_provider_failure_is_one_line_exit_5_and_the_transcript_keeps_what_was_done(
    stub: Stub, tools_file: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    stub.reply(401, shapes.anthropic_error("authentication_error", "invalid x-api-key"))
    saved = tmp_path / "t.json"
    result = invoke(
        "--model",
        "anthropic:m",
        "--base-url",
        stub.url,
        "-f",
        str(tools_file),
        "--prompt",
        PROMPT,
        "--repeat",
        "2",
        "--save",
        str(saved),
    )
    assert result.exit_code == 5
    assert result.stderr.strip().count("\n") == 0
    assert "Anthropic rejected the key in ANTHROPIC_API_KEY (401 authentication_error)" in result.stderr
    assert "Traceback" not in result.output
    transcript = json.loads(saved.read_text(encoding="utf-8"))
    assert len(transcript["exchanges"]) == 1 and "401" in transcript["error"]


def test_429_retry_after_is_honoured_end_to_end(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    stub.reply(
        429, shapes.openai_error("Rate limit reached", "requests", "rate_limit_exceeded"), headers={"retry-after": "1"}
    )
    stub.reply(200, shapes.openai_completion({"content": "Yes."}, "stop"))
    started = time.monotonic()
    result = invoke("--model", "openai:gpt-4o-mini", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 1.0
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    ("model", "variables"),
    [
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai:gpt-4o", "OPENAI_API_KEY"),
        ("gemini:gemini-2.5-flash", "GOOGLE_API_KEY or GEMINI_API_KEY"),
    ],
)
def test_missing_key_names_the_variable_exit_4(tools_file: Path, model: str, variables: str) -> None:
    result = invoke("--model", model, "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 4
    assert f"set {variables}" in result.stderr


def test_bare_model_without_base_url_is_a_usage_error(tools_file: Path) -> None:
    result = invoke("--model", "llama3", "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 2
    assert "name the provider" in result.stderr


def test_remote_without_a_terminal_and_without_yes_sends_nothing(tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    result = invoke("--model", "anthropic:claude-sonnet-4-5", "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 2
    message = result.stderr
    assert "will send the prompt (1 request) and the 2 tool definitions of" in message
    assert "to Anthropic at https://api.anthropic.com/v1/messages, model claude-sonnet-4-5" in message
    assert "Pass --yes to send" in message
    assert KEY not in message


def test_yes_sends_to_a_remote_base_url(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    # No key: a key never goes over plain http to another host (tests/trial/test_hostile_provider.py).
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://provider.test")
    monkeypatch.setenv("HTTP_PROXY", stub.url)  # the "remote" host is reached through the loopback stub
    stub.reply(200, anthropic_call("search_catalog", {"query": "tent"}))
    result = invoke("--model", "anthropic:claude-sonnet-4-5", "-f", str(tools_file), "--prompt", PROMPT, "--yes")
    assert result.exit_code == 0, result.output
    assert stub.requests[0].target == "http://provider.test/v1/messages"


def test_gemini_base_url_variable(stub: Stub, tools_file: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", stub.url)
    stub.reply(200, shapes.gemini_response([{"text": "Yes."}]))
    result = invoke("--model", "gemini:models/gemini-2.5-flash", "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 0, result.output
    assert stub.requests[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert stub.requests[0].body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}


def test_prompt_from_standard_input(stub: Stub, tools_file: Path) -> None:
    stub.reply(200, shapes.openai_completion({"content": "Yes."}, "stop"))
    result = invoke(
        "--model", "local", "--base-url", stub.url, "-f", str(tools_file), input="  Is the tent in stock?\n"
    )
    assert result.exit_code == 0, result.output
    assert stub.requests[0].body["messages"][0]["content"] == "Is the tent in stock?"


def test_stdio_server_is_the_tool_source(stub: Stub) -> None:
    from tests.servers.launch import sdk_command

    stub.reply(
        200,
        shapes.openai_completion(
            {"content": None, "tool_calls": [shapes.openai_tool_call("get_weather", '{"city": "Oslo"}')]}
        ),
    )
    result = invoke(
        "--model", "local", "--base-url", stub.url, "--prompt", "Weather in Oslo?", "--", *sdk_command("stdio")
    )
    assert result.exit_code == 0, result.output
    sent = [tool["function"]["name"] for tool in stub.requests[0].body["tools"]]
    assert "get_weather" in sent
    assert '[ok] get_weather {"city": "Oslo"}' in result.stdout


def test_newest_stored_list_from_the_database(stub: Stub, tmp_path: Path) -> None:
    from scanner.measure.toollist import measure
    from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
    from scanner.store import open_store

    db = tmp_path / "fathom.db"
    entry = ServerEntry(name="store", transport=Transport.STDIO, command=("store",), source="test")
    with open_store(f"sqlite:///{db}") as store:
        for tools in (TOOLS[:1], TOOLS):
            run_id = store.start_run("test", "1", {})
            store.record_scan(run_id, entry, ScanOutcome(Outcome.OK, "stdio", tools=tuple(tools)), measure)
            store.finish_run(run_id)
        failed = store.start_run("test", "1", {})
        store.record_scan(failed, entry, ScanOutcome(Outcome.TIMEOUT, "stdio", detail="slow"), measure)
        store.finish_run(failed)
    stub.reply(200, shapes.openai_completion({"content": "Yes."}, "stop"))
    result = invoke(
        "--model", "local", "--base-url", stub.url, "--db", str(db), "--server", "store", "--prompt", PROMPT
    )
    assert result.exit_code == 0, result.output
    assert [t["function"]["name"] for t in stub.requests[0].body["tools"]] == ["search_catalog", "place_order"]
    assert "tools: 2 from store (run 2, stored)" in result.stdout
    missing = invoke(
        "--model", "local", "--base-url", stub.url, "--db", str(db), "--server", "nope", "--prompt", PROMPT
    )
    assert missing.exit_code == 2 and "nope" in missing.stderr


def test_an_unreachable_tool_server_exits_3(stub: Stub) -> None:
    result = invoke("--model", "local", "--base-url", stub.url, "--url", "http://127.0.0.1:9/mcp", "--prompt", PROMPT)
    assert result.exit_code == 3
    assert stub.requests == []


def test_model_text_cannot_drive_the_terminal(stub: Stub, tools_file: Path) -> None:
    stub.reply(
        200,
        shapes.openai_completion(
            {
                "content": "\x1b[2J\x1b]0;owned\x07gone",
                "tool_calls": [shapes.openai_tool_call("\x1b[31msearch_catalog", '{"query": "\\u202etent"}')],
            }
        ),
    )
    result = invoke("--model", "local", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "\\u001b[31msearch_catalog" in result.stdout and "which is not in the list" in result.stdout


def test_an_oversized_answer_is_not_read(stub: Stub, tools_file: Path) -> None:
    stub.reply(200, raw=b"{" + b" " * (9 << 20) + b"}")
    result = invoke("--model", "local", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT)
    assert result.exit_code == 5
    assert "larger than 8 MiB" in result.stderr


def test_markdown_escapes_what_came_from_outside(stub: Stub, tools_file: Path) -> None:
    stub.reply(200, shapes.openai_completion({"content": "<img src=x onerror=alert(1)> | cell"}, "stop"))
    result = invoke(
        "--model", "local", "--base-url", stub.url, "-f", str(tools_file), "--prompt", PROMPT, "--format", "markdown"
    )
    assert result.exit_code == 0, result.output
    assert "<img" not in result.stdout and "&lt;img" in result.stdout
    assert "<" not in result.stdout.replace("<missing>", "")
