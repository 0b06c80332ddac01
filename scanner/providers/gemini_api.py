"""Gemini ``generateContent``: one turn with tools, beside the view it sends (:mod:`scanner.providers.gemini`).

``POST {base}/v1beta/models/{model}:generateContent`` with ``x-goog-api-key``; the body is ``{"contents":
[{"role": "user", "parts": [{"text": prompt}]}], "tools": view, "toolConfig": {"functionCallingConfig":
{"mode": "AUTO"}}, "generationConfig": {"maxOutputTokens": n}}``. The key comes from ``GOOGLE_API_KEY`` or
``GEMINI_API_KEY`` (the first wins when both are set, as in the official SDK); the base URL from ``--base-url``
or ``GOOGLE_GEMINI_BASE_URL`` (the SDK's variable).

The answer's ``candidates[0].content.parts`` hold ``text`` and ``functionCall`` (``{"name", "args"}``) parts
(parts marked ``thought`` are thinking, not the answer); ``finishReason`` is ``STOP`` (also when it calls a
function), ``MAX_TOKENS``, a safety reason (``SAFETY``, ``PROHIBITED_CONTENT``, ``BLOCKLIST``, ``SPII``,
``RECITATION``, ...) or ``MALFORMED_FUNCTION_CALL``; a blocked prompt has no candidate and a
``promptFeedback.blockReason``. ``usageMetadata`` has ``promptTokenCount``, ``candidatesTokenCount`` and
``thoughtsTokenCount``: output tokens here are candidates plus thoughts (thinking is billed as output).
Errors are ``{"error": {"code", "message", "status"}}``; a bad key is 400 with reason ``API_KEY_INVALID``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from scanner.providers.api import (
    MalformedAnswer,
    ModelAnswer,
    ModelApi,
    Stop,
    ToolCall,
    Usage,
    as_object,
    need_int,
    need_object,
)

_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE", "OTHER_SAFETY"}
)
_USAGE_DETAILS = ("candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount", "toolUsePromptTokenCount")
_MALFORMED = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})


class GeminiApi(ModelApi):
    provider = "gemini"
    label = "Gemini"
    key_envs = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    base_url_env = "GOOGLE_GEMINI_BASE_URL"
    default_base_url = "https://generativelanguage.googleapis.com"
    price_provider_id = "google"

    def endpoint(self, base_url: str, model: str) -> str:
        name = model.removeprefix("models/")
        return f"{base_url}/v1beta/models/{quote(name, safe='-._~')}:generateContent"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def body(
        self, model: str, prompt: str, tools: list[dict[str, Any]], max_tokens: int, *, custom_base: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
        if tools:
            body["tools"] = tools
            body["toolConfig"] = {"functionCallingConfig": {"mode": "AUTO"}}
        body["generationConfig"] = {"maxOutputTokens": max_tokens}
        return body

    @staticmethod
    def declared_names(tools: list[dict[str, Any]]) -> list[str]:
        return [
            str(declaration.get("name", ""))
            for tool in tools
            for declaration in tool.get("functionDeclarations", ())
            if isinstance(declaration, dict)
        ]

    def parse(self, document: Any) -> ModelAnswer:
        answer = need_object(document, "response", self.label)
        meta = as_object(answer.get("usageMetadata"))
        prompt_tokens = need_int(meta.get("promptTokenCount"))
        candidates_tokens = need_int(meta.get("candidatesTokenCount"))
        thoughts = need_int(meta.get("thoughtsTokenCount"))
        output = None if candidates_tokens is None and thoughts is None else (candidates_tokens or 0) + (thoughts or 0)
        details = {key: value for key in _USAGE_DETAILS if (value := need_int(meta.get(key))) is not None}
        usage = Usage(prompt_tokens, output, details)
        version = answer.get("modelVersion")
        model = version if isinstance(version, str) else None
        candidates = answer.get("candidates")
        if not candidates:
            feedback = answer.get("promptFeedback")
            block = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if isinstance(block, str):
                return ModelAnswer((), "", Stop.FILTERED, f"prompt blocked: {block}", usage, model)
            raise MalformedAnswer(f"{self.label}'s answer has no candidates and no block reason")
        if not isinstance(candidates, list):
            raise MalformedAnswer(f"{self.label}'s answer has no candidates list")
        candidate = need_object(candidates[0], "candidate", self.label)
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        calls: list[ToolCall] = []
        texts: list[str] = []
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                raise MalformedAnswer(f"{self.label}'s answer has a part that is not an object")
            call = part.get("functionCall")
            if isinstance(call, dict):
                name = call.get("name")
                if not isinstance(name, str):
                    raise MalformedAnswer(f"{self.label}'s answer has a functionCall without a name")
                arguments = call.get("args", {})
                error = None if isinstance(arguments, dict) else "the args are not a JSON object"
                identifier = call.get("id") if isinstance(call.get("id"), str) else None
                calls.append(ToolCall(name=name, arguments=arguments, arguments_error=error, call_id=identifier))
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
        reason = candidate.get("finishReason")
        reason_text = reason if isinstance(reason, str) else ""
        if reason_text == "MAX_TOKENS":
            stop = Stop.MAX_TOKENS
        elif reason_text in _FILTERED:
            stop = Stop.FILTERED
        elif reason_text in _MALFORMED:
            stop = Stop.MALFORMED_CALL
        elif reason_text == "STOP" or (not reason_text and parts):
            stop = Stop.TOOL_USE if calls else Stop.END_TURN
        else:
            stop = Stop.OTHER
        return ModelAnswer(tuple(calls), "\n".join(texts), stop, reason_text or "none", usage, model)

    def error_detail(self, document: Any) -> tuple[str, str]:
        error = document.get("error") if isinstance(document, dict) else None
        if not isinstance(error, dict):
            return "", ""
        status = error.get("status")
        kind = status if isinstance(status, str) else ""
        details = error.get("details")
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, dict) and detail.get("reason") == "API_KEY_INVALID":
                kind = "API_KEY_INVALID"
        message = error.get("message")
        return kind, message if isinstance(message, str) else ""
