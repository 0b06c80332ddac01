"""Anthropic Messages API: one turn with tools, beside the view it sends (:mod:`scanner.providers.anthropic`).

``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``; the body is
``{"model", "max_tokens", "messages": [{"role": "user", "content": prompt}], "tools": view, "tool_choice":
{"type": "auto"}}``. The answer's ``content`` holds ``text`` and ``tool_use`` blocks (``{"id", "name",
"input"}``); ``stop_reason`` is ``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``, ``refusal``,
``pause_turn`` or ``model_context_window_exceeded``; ``usage`` has ``input_tokens`` and ``output_tokens``.
Errors are ``{"type": "error", "error": {"type", "message"}}``. Base URL from ``--base-url`` or
``ANTHROPIC_BASE_URL`` (as the official SDK reads it).
"""

from __future__ import annotations

from typing import Any

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

API_VERSION = "2023-06-01"

_STOPS = {
    "tool_use": Stop.TOOL_USE,
    "end_turn": Stop.END_TURN,
    "stop_sequence": Stop.END_TURN,
    "max_tokens": Stop.MAX_TOKENS,
    "model_context_window_exceeded": Stop.MAX_TOKENS,
    "refusal": Stop.REFUSAL,
}


class AnthropicApi(ModelApi):
    provider = "anthropic"
    label = "Anthropic"
    key_envs = ("ANTHROPIC_API_KEY",)
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"
    price_provider_id = "anthropic"

    def endpoint(self, base_url: str, model: str) -> str:
        return f"{base_url}/v1/messages"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def headers(self) -> dict[str, str]:
        return {"content-type": "application/json", "anthropic-version": API_VERSION}

    def body(
        self, model: str, prompt: str, tools: list[dict[str, Any]], max_tokens: int, *, custom_base: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if tools:  # tool_choice without tools is refused
            body["tools"] = tools
            body["tool_choice"] = {"type": "auto"}
        return body

    def parse(self, document: Any) -> ModelAnswer:
        message = need_object(document, "message", self.label)
        blocks = need_list(message.get("content"), "content", self.label)
        calls: list[ToolCall] = []
        texts: list[str] = []
        for block in blocks:
            if not isinstance(block, dict):
                raise MalformedAnswer(f"{self.label}'s answer has a content block that is not an object")
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use":
                name = block.get("name")
                if not isinstance(name, str):
                    raise MalformedAnswer(f"{self.label}'s answer has a tool_use block without a name")
                arguments = block.get("input")
                error = None if isinstance(arguments, dict) else "the input is not a JSON object"
                call_id = block.get("id") if isinstance(block.get("id"), str) else None
                calls.append(ToolCall(name=name, arguments=arguments, arguments_error=error, call_id=call_id))
        reason = message.get("stop_reason")
        reason_text = reason if isinstance(reason, str) else ""
        usage = as_object(message.get("usage"))
        details = {
            key: value
            for key in ("cache_creation_input_tokens", "cache_read_input_tokens")
            if (value := need_int(usage.get(key))) is not None
        }
        model = message.get("model")
        return ModelAnswer(
            calls=tuple(calls),
            text="\n".join(texts),
            stop=_STOPS.get(reason_text, Stop.OTHER),
            stop_reason=reason_text or "none",
            usage=Usage(need_int(usage.get("input_tokens")), need_int(usage.get("output_tokens")), details),
            model=model if isinstance(model, str) else None,
        )

    def error_detail(self, document: Any) -> tuple[str, str]:
        error = document.get("error") if isinstance(document, dict) else None
        if not isinstance(error, dict):
            return "", ""
        kind, message = error.get("type"), error.get("message")
        return (kind if isinstance(kind, str) else "", message if isinstance(message, str) else "")
