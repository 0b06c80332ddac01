"""JSON-RPC 2.0 messages as the scanner sends and reads them: built here, classified here, never trusted.

Only single messages are sent (batches were removed in 2025-06-18 and some servers mishandle them). What comes
back is checked for shape only as far as routing needs: a response's ``id`` must be one the client issued.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scanner import wire
from scanner.mcp.failures import ScanFailure
from scanner.models import Outcome

METHOD_NOT_FOUND = -32601
# 2026-07-28 errors that only a modern server sends (spec basic/versioning, schema).
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


def request(request_id: int, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode(raw: bytes | str, what: str = "answer") -> Any:
    """Parse one JSON text; anything unparsable is the server's ``invalid_response``."""
    try:
        return wire.loads(raw)
    except (ValueError, RecursionError) as exc:
        snippet = wire.decode_bytes(raw[:80]) if isinstance(raw, bytes) else wire.clean_str(raw[:80])
        raise ScanFailure(Outcome.INVALID_RESPONSE, f"{what} is not JSON: {snippet!r}", {"snippet": snippet}) from exc


def same_id(value: Any, request_id: int) -> bool:
    """True if ``value`` is exactly the integer id sent (``true`` and ``"1"`` are not ``1``)."""
    return type(value) is int and value == request_id


def is_response(message: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


def is_server_request(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message


def reply_to_server_request(message: Mapping[str, Any]) -> dict[str, Any]:
    """What the scanner answers a server's own request: ``{}`` to ``ping``, method-not-found to the rest.

    The scanner never samples, elicits or lists roots for a server; it only has to keep the exchange valid.
    """
    if message.get("method") == "ping":
        return {"jsonrpc": "2.0", "id": message.get("id"), "result": {}}
    return {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "error": {"code": METHOD_NOT_FOUND, "message": "Method not found"},
    }


def error_of(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``error`` member as ``{code, message, data}`` (wrong types kept as sent), or None for a result."""
    if "error" not in message:
        return None
    error = message["error"]
    if not isinstance(error, dict):
        return {"code": None, "message": str(error)[:200], "data": None}
    return {"code": error.get("code"), "message": error.get("message"), "data": error.get("data")}


def is_modern_error(error: Mapping[str, Any] | None) -> bool:
    """A JSON-RPC error only a 2026-07-28 server sends (by code, or a -32601 carrying ``data.supported``)."""
    if error is None:
        return False
    code = error.get("code")
    if type(code) is not int:
        return False
    if code in MODERN_ERROR_CODES:
        return True
    data = error.get("data")
    return code == METHOD_NOT_FOUND and isinstance(data, dict) and isinstance(data.get("supported"), list)


def result_of(message: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The ``result`` object of a response; a JSON-RPC error or a non-object result ends the scan."""
    error = error_of(message)
    if error is not None:
        text = error["message"] if isinstance(error["message"], str) else repr(error["message"])
        raise ScanFailure(
            Outcome.PROTOCOL_ERROR,
            f"{method} failed: JSON-RPC error {error['code']!r}: {text[:200]}",
            {"method": method, "error": {"code": error["code"], "message": text[:500]}},
        )
    result = message.get("result")
    if not isinstance(result, dict):
        raise ScanFailure(
            Outcome.INVALID_RESPONSE,
            f"{method} result is {type(result).__name__}, not an object",
            {"method": method},
        )
    return result
