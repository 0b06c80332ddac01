"""Provider answers built through the official SDKs' own types, so the stubs reply in the providers' real shapes.

Each builder validates its payload with the SDK's pydantic model (a field the SDK does not know, or a wrong
type, fails here) and dumps it as the provider's JSON (Gemini's in camelCase, as on the wire).
"""

from __future__ import annotations

from typing import Any

import anthropic.types as at
from google.genai import types as gt
from openai.types import shared as os_
from openai.types.chat import ChatCompletion

MODEL_A = "claude-opus-4-7"
MODEL_O = "gpt-4o-mini"
MODEL_G = "gemini-2.5-flash"


def anthropic_message(
    content: list[dict[str, Any]], stop_reason: str = "tool_use", input_tokens: int = 812, output_tokens: int = 57
) -> dict[str, Any]:
    message = at.Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL_A,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )
    return message.model_dump(mode="json", exclude_unset=True)


def anthropic_tool_use(name: str, arguments: dict[str, Any], call_id: str = "toolu_01") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return at.ErrorResponse.model_validate({"type": "error", "error": {"type": kind, "message": message}}).model_dump(
        mode="json", exclude_unset=True
    )


def openai_completion(
    message: dict[str, Any], finish_reason: str = "tool_calls", prompt_tokens: int = 640, completion_tokens: int = 31
) -> dict[str, Any]:
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764500000,
            "model": MODEL_O,
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )
    return completion.model_dump(mode="json", exclude_unset=True)


def openai_tool_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    error = os_.ErrorObject.model_validate({"message": message, "type": kind, "param": None, "code": code})
    return {"error": error.model_dump(mode="json")}


def gemini_response(
    parts: list[dict[str, Any]] | None,
    finish_reason: str = "STOP",
    prompt_tokens: int = 700,
    output_tokens: int = 20,
    thoughts: int | None = None,
    block_reason: str | None = None,
) -> dict[str, Any]:
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens}
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    raw: dict[str, Any] = {"usageMetadata": usage, "modelVersion": MODEL_G}
    if parts is not None:
        raw["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}]
    if block_reason is not None:
        raw["promptFeedback"] = {"blockReason": block_reason}
    response = gt.GenerateContentResponse.model_validate(raw)
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)


def gemini_error(code: int, status: str, message: str, reason: str | None = None) -> dict[str, Any]:
    """google.rpc.Status as the Gemini API sends it (the SDK has no type for it)."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if reason is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return {"error": error}
