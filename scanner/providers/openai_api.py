"""OpenAI Chat Completions: one turn with tools, beside the view it sends (:mod:`scanner.providers.openai`).

``POST {base}/v1/chat/completions`` (``{base}/chat/completions`` when the base URL already ends in a version
such as ``/v1``, or in ``/openai``: the form Ollama, llama.cpp's server, vLLM and LM Studio document, and the form
``OPENAI_BASE_URL`` takes for the official SDK) with ``Authorization: Bearer <key>``. The body is ``{"model",
"messages": [{"role": "user", "content": prompt}], "tools": view, "tool_choice": "auto"}`` plus the output
limit: ``max_completion_tokens`` for OpenAI's own API (``max_tokens`` is deprecated there and refused by
reasoning models), ``max_tokens`` for any other base URL (the field every OpenAI-compatible server accepts).

The answer's ``choices[0].message`` holds ``content``, ``refusal`` and ``tool_calls`` (``{"id", "type":
"function", "function": {"name", "arguments"}}`` with the arguments as a JSON *string*, which may not parse);
``finish_reason`` is ``stop``, ``tool_calls``, ``length``, ``content_filter`` or ``function_call``; ``usage``
has ``prompt_tokens`` and ``completion_tokens``. Errors are ``{"error": {"message", "type", "code"}}`` (vLLM puts
the same fields at the top level).
"""

from __future__ import annotations

import re
from typing import Any

from scanner import wire
from scanner.providers.api import (
    MalformedAnswer,
    ModelAnswer,
    ModelApi,
    Stop,
    ToolCall,
    Usage,
    as_object,
    need_int,
    need_list,
    need_object,
)

_VERSIONED = re.compile(r"/(v\d+[a-z0-9]*|openai)$")

_STOPS = {
    "tool_calls": Stop.TOOL_USE,
    "function_call": Stop.TOOL_USE,
    "stop": Stop.END_TURN,
    "length": Stop.MAX_TOKENS,
    "content_filter": Stop.FILTERED,
}


class OpenAIApi(ModelApi):
    provider = "openai"
    label = "OpenAI"
    key_envs = ("OPENAI_API_KEY",)
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com"
    price_provider_id = "openai"

    def endpoint(self, base_url: str, model: str) -> str:
        if _VERSIONED.search(base_url):
            return f"{base_url}/chat/completions"
        return f"{base_url}/v1/chat/completions"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def body(
        self, model: str, prompt: str, tools: list[dict[str, Any]], max_tokens: int, *, custom_base: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}]}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        body["max_tokens" if custom_base else "max_completion_tokens"] = max_tokens
        return body

    @staticmethod
    def declared_names(tools: list[dict[str, Any]]) -> list[str]:
        return [str(tool.get("function", {}).get("name", "")) for tool in tools]

    def parse(self, document: Any) -> ModelAnswer:
        completion = need_object(document, "completion", self.label)
        choices = need_list(completion.get("choices"), "choices", self.label)
        if not choices:
            raise MalformedAnswer(f"{self.label}'s answer has no choices")
        choice = need_object(choices[0], "choice", self.label)
        message = need_object(choice.get("message"), "message", self.label)
        calls: list[ToolCall] = []
        tool_calls = message.get("tool_calls")
        if tool_calls is not None and not isinstance(tool_calls, list):
            raise MalformedAnswer(f"{self.label}'s answer has tool_calls that are not a list")
        for raw in tool_calls or ():
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise MalformedAnswer(f"{self.label}'s answer has a tool call without a function name")
            calls.append(_call(function, raw.get("id")))
        legacy = message.get("function_call")
        if not calls and isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
            calls.append(_call(legacy, None))
        reason = choice.get("finish_reason")
        reason_text = reason if isinstance(reason, str) else ""
        refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
        stop = Stop.REFUSAL if refusal else _STOPS.get(reason_text, Stop.OTHER)
        usage = as_object(completion.get("usage"))
        details: dict[str, int] = {}
        for group, key in (
            ("completion_tokens_details", "reasoning_tokens"),
            ("prompt_tokens_details", "cached_tokens"),
        ):
            if (value := need_int(as_object(usage.get(group)).get(key))) is not None:
                details[key] = value
        content = message.get("content")
        if isinstance(content, list):  # some compatible servers send content parts
            content = "".join(
                part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        model = completion.get("model")
        return ModelAnswer(
            calls=tuple(calls),
            text=content if isinstance(content, str) else "",
            stop=stop,
            stop_reason=reason_text or "none",
            usage=Usage(need_int(usage.get("prompt_tokens")), need_int(usage.get("completion_tokens")), details),
            model=model if isinstance(model, str) else None,
            refusal=refusal,
        )

    def error_detail(self, document: Any) -> tuple[str, str]:
        if not isinstance(document, dict):
            return "", ""
        error = document.get("error")
        source = error if isinstance(error, dict) else document
        kind = source.get("code") or source.get("type")
        message = source.get("message")
        if isinstance(error, str):  # some servers send {"error": "text"}
            message = error
        return (str(kind) if isinstance(kind, str | int) else "", message if isinstance(message, str) else "")


def _call(function: dict[str, Any], call_id: Any) -> ToolCall:
    raw_arguments = function.get("arguments")
    name = function["name"]
    identifier = call_id if isinstance(call_id, str) else None
    if isinstance(raw_arguments, dict):  # some compatible servers send the object itself
        return ToolCall(name=name, arguments=raw_arguments, call_id=identifier)
    if not isinstance(raw_arguments, str):
        return ToolCall(name, None, "the arguments are missing (not a JSON string)", identifier)
    try:
        arguments = wire.loads(raw_arguments) if raw_arguments.strip() else {}
    except (ValueError, RecursionError) as exc:
        return ToolCall(name, None, f"the arguments are not valid JSON ({exc})", identifier)
    if not isinstance(arguments, dict):
        return ToolCall(name, arguments, "the arguments are not a JSON object", identifier)
    return ToolCall(name=name, arguments=arguments, call_id=identifier)


class OpenAICompatibleApi(OpenAIApi):
    """The same wire format at a server that is not OpenAI's (Ollama, llama.cpp, vLLM, LM Studio, a gateway)."""

    label = "the OpenAI-compatible server"
