"""Fathom's requests against each provider's official SDK, and its reading of the providers' real answers.

The parity tests send one turn twice to the same loopback stub: once through the official SDK (anthropic,
openai, google-genai) and once through Fathom, with the same model, prompt, tools (Fathom's provider view) and
output limit. Path, auth header, version header and the whole JSON body must be identical, so a drift from the
documented request shape fails here. The answers are built through the SDKs' own types (:mod:`tests.trial.shapes`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as gt

from scanner.providers import provider_view
from scanner.providers.anthropic_api import AnthropicApi
from scanner.providers.api import Call, Limits, MalformedAnswer, ModelApi, ModelApiError, Stop, send
from scanner.providers.gemini_api import GeminiApi
from scanner.providers.openai_api import OpenAIApi
from tests.trial import shapes
from tests.trial.stub import Stub

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_catalog",
        "description": "Search the outdoor store's catalogue; returns items with stock counts.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to search for."},
                "max_results": {"type": "integer", "minimum": 1, "default": 10},
                "in_stock": {"type": ["boolean", "null"]},
            },
            "required": ["query"],
        },
    },
    {"name": "place_order", "description": "Order an item.", "inputSchema": {"type": "object"}},
]
PROMPT = "Is the two-person tent in stock?"
KEY = "sk-test-0123456789abcdef"


def fathom_send(api: ModelApi, stub: Stub, model: str, *, custom_base: bool = True, **kwargs: Any) -> Any:
    view = provider_view(api.provider, TOOLS)
    base = stub.url + ("/v1" if api.provider == "openai" else "")
    call = Call(
        url=api.endpoint(base, model),
        headers=api.headers(),
        auth_headers=api.auth_headers(KEY),
        body=api.body(model, PROMPT, view, 256, custom_base=custom_base),
        key_env=api.key_envs[0],
    )
    return send(api, call, Limits(**kwargs) if kwargs else Limits(retries=0))


def test_anthropic_request_matches_the_sdk(stub: Stub) -> None:
    reply = shapes.anthropic_message([shapes.anthropic_tool_use("search_catalog", {"query": "tent"})])
    stub.reply(200, reply)
    stub.reply(200, reply)
    view = provider_view("anthropic", TOOLS)
    client = anthropic.Anthropic(api_key=KEY, base_url=stub.url, max_retries=0)
    client.messages.create(
        model=shapes.MODEL_A,
        max_tokens=256,
        messages=[{"role": "user", "content": PROMPT}],
        tools=view,  # type: ignore[arg-type]
        tool_choice={"type": "auto"},
    )
    fathom_send(AnthropicApi(), stub, shapes.MODEL_A)
    sdk, ours = stub.requests
    assert ours.path == sdk.path == "/v1/messages"
    # The documented headers (API reference: x-api-key, anthropic-version 2023-06-01). SDK 2.x sends the same key
    # as "Authorization: Bearer" and a newer version date; the API takes both, Fathom keeps the documented form.
    assert ours.headers["x-api-key"] == KEY
    assert KEY in (sdk.headers.get("x-api-key"), sdk.headers.get("authorization", "").removeprefix("Bearer "))
    assert ours.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in ours.headers
    assert ours.body == sdk.body
    assert ours.body["tools"][0] == {
        "name": "search_catalog",
        "description": TOOLS[0]["description"],
        "input_schema": TOOLS[0]["inputSchema"],
    }


@pytest.mark.parametrize("custom_base", [False, True])
def test_openai_request_matches_the_sdk(stub: Stub, custom_base: bool) -> None:
    reply = shapes.openai_completion({"content": None, "tool_calls": [shapes.openai_tool_call("search_catalog", "{}")]})
    stub.reply(200, reply)
    stub.reply(200, reply)
    view = provider_view("openai", TOOLS)
    client = openai.OpenAI(api_key=KEY, base_url=stub.url + "/v1", max_retries=0)
    limit: dict[str, Any] = {"max_tokens": 256} if custom_base else {"max_completion_tokens": 256}
    client.chat.completions.create(
        model=shapes.MODEL_O,
        messages=[{"role": "user", "content": PROMPT}],
        tools=view,  # type: ignore[arg-type]
        tool_choice="auto",
        **limit,
    )
    fathom_send(OpenAIApi(), stub, shapes.MODEL_O, custom_base=custom_base)
    sdk, ours = stub.requests
    assert ours.path == sdk.path == "/v1/chat/completions"
    assert ours.headers["authorization"] == sdk.headers["authorization"] == f"Bearer {KEY}"
    assert ours.body == sdk.body
    assert ours.body["tools"][0]["type"] == "function"
    assert ours.body["tools"][0]["function"]["parameters"] == TOOLS[0]["inputSchema"]


def test_openai_endpoint_for_base_urls() -> None:
    api = OpenAIApi()
    assert api.endpoint("https://api.openai.com", "m") == "https://api.openai.com/v1/chat/completions"
    assert api.endpoint("http://localhost:11434/v1", "m") == "http://localhost:11434/v1/chat/completions"
    assert api.endpoint("http://127.0.0.1:8080", "m") == "http://127.0.0.1:8080/v1/chat/completions"
    assert (
        api.endpoint("https://generativelanguage.googleapis.com/v1beta/openai", "m")
        == "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
    )


def test_gemini_request_matches_the_sdk(stub: Stub) -> None:
    reply = shapes.gemini_response([{"functionCall": {"name": "search_catalog", "args": {"query": "tent"}}}])
    stub.reply(200, reply)
    stub.reply(200, reply)
    view = provider_view("gemini", TOOLS)
    client = genai.Client(api_key=KEY, http_options=gt.HttpOptions(base_url=stub.url, api_version="v1beta"))
    client.models.generate_content(
        model=shapes.MODEL_G,
        contents=PROMPT,
        config=gt.GenerateContentConfig(
            tools=[gt.Tool.model_validate(tool) for tool in view],
            tool_config=gt.ToolConfig(
                function_calling_config=gt.FunctionCallingConfig(mode=gt.FunctionCallingConfigMode.AUTO)
            ),
            max_output_tokens=256,
        ),
    )
    fathom_send(GeminiApi(), stub, shapes.MODEL_G)
    sdk, ours = stub.requests
    assert ours.path == sdk.path == f"/v1beta/models/{shapes.MODEL_G}:generateContent"
    assert ours.headers["x-goog-api-key"] == sdk.headers["x-goog-api-key"] == KEY
    assert ours.body == _proto_names_as_camel(sdk.body)
    assert ours.body["tools"] == view


def _proto_names_as_camel(body: dict[str, Any]) -> dict[str, Any]:
    """google-genai sends ``parametersJsonSchema`` under its proto field name, ``parameters_json_schema`` (its
    contents are passed through unconverted, and so is the key). The API's JSON mapping accepts either; Fathom
    writes the lowerCamelCase name the REST reference documents, so compare with the SDK's key renamed."""
    copied = json.loads(json.dumps(body))
    for tool in copied.get("tools", []):
        for declaration in tool.get("functionDeclarations", []):
            if "parameters_json_schema" in declaration:
                declaration["parametersJsonSchema"] = declaration.pop("parameters_json_schema")
    return copied


def test_reads_tool_calls_text_and_usage(stub: Stub) -> None:
    stub.reply(
        200,
        shapes.anthropic_message(
            [
                {"type": "text", "text": "Let me look that up."},
                shapes.anthropic_tool_use("search_catalog", {"query": "two-person tent"}),
            ]
        ),
    )
    exchange, answer = fathom_send(AnthropicApi(), stub, shapes.MODEL_A)
    assert answer.stop is Stop.TOOL_USE
    assert answer.text == "Let me look that up."
    assert [(c.name, c.arguments) for c in answer.calls] == [("search_catalog", {"query": "two-person tent"})]
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (812, 57)
    assert exchange.status == 200 and exchange.attempts == 1
    assert KEY not in json.dumps([exchange.url, dict(exchange.request_headers), exchange.request_body])


def test_openai_arguments_that_are_not_json_are_said(stub: Stub) -> None:
    stub.reply(
        200,
        shapes.openai_completion(
            {"content": None, "tool_calls": [shapes.openai_tool_call("search_catalog", '{"query": "tent"')]}
        ),
    )
    _, answer = fathom_send(OpenAIApi(), stub, shapes.MODEL_O)
    (call,) = answer.calls
    assert call.arguments is None and call.arguments_error is not None
    assert call.arguments_error.startswith("the arguments are not valid JSON")


@pytest.mark.parametrize(
    ("api", "reply", "stop"),
    [
        (
            AnthropicApi(),
            shapes.anthropic_message([{"type": "text", "text": "The tent"}], "max_tokens"),
            Stop.MAX_TOKENS,
        ),
        (AnthropicApi(), shapes.anthropic_message([], "refusal"), Stop.REFUSAL),
        (OpenAIApi(), shapes.openai_completion({"content": "The te"}, "length"), Stop.MAX_TOKENS),
        (OpenAIApi(), shapes.openai_completion({"content": None}, "content_filter"), Stop.FILTERED),
        (OpenAIApi(), shapes.openai_completion({"content": None, "refusal": "I can't help."}, "stop"), Stop.REFUSAL),
        (GeminiApi(), shapes.gemini_response([{"text": "The"}], "MAX_TOKENS"), Stop.MAX_TOKENS),
        (GeminiApi(), shapes.gemini_response([], "SAFETY"), Stop.FILTERED),
        (GeminiApi(), shapes.gemini_response(None, block_reason="PROHIBITED_CONTENT"), Stop.FILTERED),
        (GeminiApi(), shapes.gemini_response([], "MALFORMED_FUNCTION_CALL"), Stop.MALFORMED_CALL),
        (GeminiApi(), shapes.gemini_response([{"text": "It is in stock."}], "STOP"), Stop.END_TURN),
    ],
)
def test_stop_reasons(stub: Stub, api: ModelApi, reply: dict[str, Any], stop: Stop) -> None:
    stub.reply(200, reply)
    model = {"anthropic": shapes.MODEL_A, "openai": shapes.MODEL_O, "gemini": shapes.MODEL_G}[api.provider]
    _, answer = fathom_send(api, stub, model)
    assert answer.stop is stop


def test_gemini_output_tokens_include_thinking(stub: Stub) -> None:
    stub.reply(200, shapes.gemini_response([{"text": "Yes."}], output_tokens=20, thoughts=100))
    _, answer = fathom_send(GeminiApi(), stub, shapes.MODEL_G)
    assert answer.usage.output_tokens == 120
    assert answer.usage.details["thoughtsTokenCount"] == 100


@pytest.mark.parametrize(
    ("api", "status", "body", "words"),
    [
        (
            AnthropicApi(),
            401,
            shapes.anthropic_error("authentication_error", "invalid x-api-key"),
            "rejected the key in ANTHROPIC_API_KEY",
        ),
        (AnthropicApi(), 403, shapes.anthropic_error("permission_error", "no access"), "is not allowed"),
        (
            AnthropicApi(),
            404,
            shapes.anthropic_error("not_found_error", "model: nope"),
            "404 not_found_error: model or endpoint not found",
        ),
        (
            OpenAIApi(),
            401,
            shapes.openai_error(f"Incorrect API key provided: {KEY}", "invalid_request_error", "invalid_api_key"),
            "rejected the key in OPENAI_API_KEY",
        ),
        (
            OpenAIApi(),
            404,
            shapes.openai_error("The model does not exist", "invalid_request_error", "model_not_found"),
            "model_not_found",
        ),
        (
            GeminiApi(),
            400,
            shapes.gemini_error(400, "INVALID_ARGUMENT", "API key not valid.", "API_KEY_INVALID"),
            "rejected the key in GOOGLE_API_KEY",
        ),
        (GeminiApi(), 404, shapes.gemini_error(404, "NOT_FOUND", "models/nope is not found"), "404 NOT_FOUND"),
        (
            OpenAIApi(),
            400,
            shapes.openai_error("Invalid 'tools[0].function.name'", "invalid_request_error", None),
            "refused the request (400 invalid_request_error)",
        ),
    ],
)
def test_errors_are_one_clear_line(stub: Stub, api: ModelApi, status: int, body: Any, words: str) -> None:
    stub.reply(status, body)
    model = {"anthropic": shapes.MODEL_A, "openai": shapes.MODEL_O, "gemini": shapes.MODEL_G}[api.provider]
    with pytest.raises(ModelApiError) as caught:
        fathom_send(api, stub, model)
    message = str(caught.value)
    assert words in message
    assert "\n" not in message and KEY not in message
    assert caught.value.exit_code == 5


def test_429_honours_retry_after_then_succeeds(stub: Stub) -> None:
    stub.reply(429, shapes.anthropic_error("rate_limit_error", "slow down"), headers={"retry-after": "2"})
    stub.reply(200, shapes.anthropic_message([{"type": "text", "text": "ok"}], "end_turn"))
    waits: list[float] = []
    api = AnthropicApi()
    call = Call(api.endpoint(stub.url, "m"), api.headers(), api.auth_headers(KEY), {"model": "m"}, "ANTHROPIC_API_KEY")
    exchange, answer = send(api, call, Limits(retries=2), sleep=waits.append)
    assert waits == [2.0]
    assert exchange.attempts == 2 and answer.text == "ok"


def test_429_retry_after_beyond_the_cap_is_not_waited(stub: Stub) -> None:
    stub.reply(
        429, shapes.openai_error("Rate limit", "requests", "rate_limit_exceeded"), headers={"retry-after": "3600"}
    )
    waits: list[float] = []
    api = OpenAIApi()
    call = Call(api.endpoint(stub.url, "m"), api.headers(), api.auth_headers(KEY), {"model": "m"}, "OPENAI_API_KEY")
    with pytest.raises(ModelApiError, match="asks to wait 3600 s before retrying, more than the 60 s allowed"):
        send(api, call, Limits(retries=2, max_retry_wait=60), sleep=waits.append)
    assert waits == [] and len(stub.requests) == 1


def test_5xx_is_retried_with_backoff_then_said(stub: Stub) -> None:
    for _ in range(3):
        stub.reply(529, shapes.anthropic_error("overloaded_error", "Overloaded"))
    waits: list[float] = []
    api = AnthropicApi()
    call = Call(api.endpoint(stub.url, "m"), api.headers(), api.auth_headers(KEY), {"model": "m"}, "ANTHROPIC_API_KEY")
    with pytest.raises(ModelApiError, match="failed with 529 overloaded_error after 3 tries: Overloaded"):
        send(api, call, Limits(retries=2, backoff=0.5), sleep=waits.append)
    assert waits == [0.5, 1.0] and len(stub.requests) == 3


def test_timeout_is_said(stub: Stub) -> None:
    stub.reply(200, shapes.anthropic_message([], "end_turn"), delay=1.0)
    with pytest.raises(ModelApiError, match=r"did not answer within 0.2 s .* tried 1 times"):
        fathom_send(AnthropicApi(), stub, shapes.MODEL_A, timeout=0.2, retries=0)


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ({"raw": b"<html>Bad gateway</html>"}, "a body that is not JSON (text/html)"),
        ({"body": {"id": "msg", "type": "message"}}, "has no content list"),
        ({"body": [1, 2]}, "has no message object"),
        ({"body": {"content": [{"type": "tool_use", "input": {}}]}}, "tool_use block without a name"),
    ],
)
def test_malformed_answers(stub: Stub, reply: dict[str, Any], words: str) -> None:
    stub.reply(200, **reply)
    with pytest.raises(MalformedAnswer, match=re.escape(words)):
        fathom_send(AnthropicApi(), stub, shapes.MODEL_A)


def test_refused_connection_is_one_line() -> None:
    api = AnthropicApi()
    call = Call("http://127.0.0.1:9/v1/messages", api.headers(), api.auth_headers(KEY), {}, "ANTHROPIC_API_KEY")
    with pytest.raises(ModelApiError, match=r"cannot reach Anthropic at http://127.0.0.1:9/v1/messages"):
        send(api, call, Limits(retries=0))


def _example_tools() -> list[Any]:
    from importlib import resources

    text = (resources.files("scanner") / "examples" / "example-tools.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return [*TOOLS, *(data["tools"] if isinstance(data, dict) else data)]


def test_every_part_of_each_request_is_a_field_the_sdk_knows() -> None:
    """The SDKs' request types: a key they do not know (a drifted field name) fails here, as it would at the API."""
    from pydantic import TypeAdapter

    tools = _example_tools()
    anthropic_body = AnthropicApi().body("m", PROMPT, provider_view("anthropic", tools), 64, custom_base=False)
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    known = MessageCreateParamsNonStreaming.__optional_keys__ | MessageCreateParamsNonStreaming.__required_keys__
    assert set(anthropic_body) <= known
    tool_keys = anthropic.types.ToolParam.__optional_keys__ | anthropic.types.ToolParam.__required_keys__
    for tool in anthropic_body["tools"]:
        assert set(tool) <= tool_keys
        TypeAdapter(anthropic.types.ToolParam).validate_python(tool)
    TypeAdapter(anthropic.types.ToolChoiceParam).validate_python(anthropic_body["tool_choice"])

    from openai.types.chat import ChatCompletionFunctionToolParam, completion_create_params
    from openai.types.shared_params import FunctionDefinition

    for custom_base in (False, True):
        openai_body = OpenAIApi().body("m", PROMPT, provider_view("openai", tools), 64, custom_base=custom_base)
        params = completion_create_params.CompletionCreateParamsNonStreaming
        assert set(openai_body) <= params.__optional_keys__ | params.__required_keys__
    for tool in openai_body["tools"]:
        assert set(tool) <= ChatCompletionFunctionToolParam.__optional_keys__ | {"type", "function"}
        assert set(tool["function"]) <= FunctionDefinition.__optional_keys__ | FunctionDefinition.__required_keys__
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(tool)

    # google-genai's models forbid unknown fields outright.
    for tool in provider_view("gemini", tools):
        gt.Tool.model_validate(tool)
    gemini_body = GeminiApi().body("m", PROMPT, provider_view("gemini", tools), 64, custom_base=False)
    gt.ToolConfig.model_validate(gemini_body["toolConfig"])
    gt.GenerationConfig.model_validate(gemini_body["generationConfig"])
    gt.Content.model_validate(gemini_body["contents"][0])


def test_compatible_servers_content_parts_and_object_arguments(stub: Stub) -> None:
    """Shapes some OpenAI-compatible servers send: content as parts, arguments as an object, not a string."""
    completion = shapes.openai_completion({"content": "x"}, "tool_calls")
    message = completion["choices"][0]["message"]
    message["content"] = [{"type": "text", "text": "Checking "}, {"type": "text", "text": "stock."}]
    message["tool_calls"] = [
        {"id": "1", "type": "function", "function": {"name": "search_catalog", "arguments": {"query": "tent"}}}
    ]
    stub.reply(200, completion)
    _, answer = fathom_send(OpenAIApi(), stub, "local")
    assert answer.text == "Checking stock."
    assert [(call.name, call.arguments, call.arguments_error) for call in answer.calls] == [
        ("search_catalog", {"query": "tent"}, None)
    ]
