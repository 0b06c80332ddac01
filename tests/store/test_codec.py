"""What crosses into JSON and blob columns: secret-free, capped, and round-tripping tool lists exactly."""

from __future__ import annotations

import json
import zlib

import pytest

from scanner.models import canonical_json
from scanner.store import codec


def test_tool_lists_round_trip_exactly() -> None:
    tools = [{"name": "ü", "description": "naïve ✓", "inputSchema": {"b": 1, "a": [None, 1.5, True]}}, 7, "x"]
    data, size = codec.compress_tools(tools)
    assert size == len(canonical_json(tools).encode("utf-8")) and len(data) < size + 20
    assert codec.decompress_tools(data) == tools
    assert list(codec.decompress_tools(data)[0]["inputSchema"]) == ["b", "a"]  # the server's key order is kept


def test_a_zip_bomb_row_is_refused() -> None:
    bomb = zlib.compress(b"[" + b" " * (codec.MAX_TOOLSET_BYTES + 10) + b"]")
    with pytest.raises(ValueError, match="size cap"):
        codec.decompress_tools(bomb)


def test_options_and_extras_lose_credentials_and_stay_small() -> None:
    cleaned = codec.small_json(
        {
            "concurrency": 8,
            "Authorization": "x",
            "X-API-Key": "x",
            "headers": {"a": "b"},
            "env": {"A": "b"},
            "github_token": "x",
            "refresh_token": "x",
            "password": "x",
            "status": 401,
            "challenge": "Bearer realm=x",
            "max_tokens": 5,
            "list": list(range(100)),
            "deep": {"a": {"b": {"c": {"d": {"e": 1}}}}},
            "nan": float("nan"),
            "text": "y" * 1000,
        }
    )
    assert set(cleaned) == {"concurrency", "status", "challenge", "max_tokens", "list", "deep", "nan", "text"}
    assert cleaned["challenge"] is None  # a Bearer value is dropped even under an innocent key
    assert len(cleaned["list"]) == codec.MAX_ITEMS and len(cleaned["text"]) == codec.MAX_STRING
    assert cleaned["deep"] == {"a": {"b": {"c": None}}} and cleaned["nan"] is None


def test_oversized_json_is_cut_to_the_limit() -> None:
    cleaned = codec.small_json({f"k{i}": "v" * 200 for i in range(20)}, limit=1000)
    assert len(json.dumps(cleaned)) <= 1000 and cleaned["truncated"] is True and "k0" in cleaned


def test_finding_details_keep_every_key() -> None:
    details = codec.details_json({"tokens": 1234, "parameters": [f"p{i}" for i in range(60)], "token": "t"})
    assert details["tokens"] == 1234 and details["token"] == "t" and len(details["parameters"]) == 60


def test_credentials_inside_sentences_are_masked() -> None:
    text = (
        "GET https://user:hunter2pass@api.example.com/mcp?api_key=SECRET123&page=2 failed; "
        "sent Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"
    )
    masked = codec.redact(text)
    for secret in ("hunter2pass", "SECRET123", "eyJhbGciOiJIUzI1NiJ9"):
        assert secret not in masked
    assert "page=2" in masked and "api.example.com/mcp" in masked and "Bearer [redacted]" in masked
    assert codec.small_json({"url": "https://x.example/?token=abc123"}) == {
        "url": "https://x.example/?token=[redacted]"
    }
