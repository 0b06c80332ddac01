"""What crosses into JSON and blob columns: secret-free, capped, and round-tripping tool lists exactly."""

from __future__ import annotations

import copy
import json
import random
import zlib
from typing import Any

import pytest

from scanner.models import canonical_json
from scanner.store import codec
from tests.check_corpus import random_json


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


# Strings that stress the size bound: escapes JSON spells longer than repr, characters of 2, 3 and 4 UTF-8 bytes,
# quotes, backslashes, DEL, NUL and lone surrogates (cleaned first), long runs.
_SIZE_ATOMS: list[Any] = [
    None,
    True,
    False,
    0,
    -12345678901234567890,
    1.5,
    1e-05,
    float("nan"),
    "",
    '"quoted" and \\ back',
    "\x01\x02\x1f" * 40,
    "\x7f\x80\xad\u200b" * 30,
    "é" * 150,
    "漢字" * 120,
    "😀" * 140,
    "\x00nul\ud800",
    "plain words " * 30,
    [],
    {},
]
_SIZE_KEYS = ["a", "é" * 30, '"k"', "\x01", "😀", "long key " * 10, "truncated"]


def _exact_small_json(cleaned: dict[str, Any], limit: int) -> dict[str, Any]:
    """:func:`codec.small_json`'s cut as it was before the size bound: encode, drop the last key, again."""
    keys = [key for key in cleaned if key != "truncated"]
    while keys and len(json.dumps(cleaned, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) > limit:
        cleaned.pop(keys.pop())
        cleaned["truncated"] = True
    return cleaned


@pytest.mark.parametrize("scrub", [True, False])
def test_the_size_bound_never_lets_an_oversized_value_through(scrub: bool) -> None:
    """Whenever ``small_json`` skips encoding (the ``repr`` bound says the value fits), it does fit; and its result
    is the exact encode-and-cut loop's at every limit, around each value's own size too."""
    rng = random.Random(2412)
    skipped = 0
    for _ in range(300):
        value = {rng.choice(_SIZE_KEYS): random_json(rng, 2, _SIZE_ATOMS, _SIZE_KEYS) for _ in range(rng.randrange(8))}
        cleaned = codec.small_json(value, 1 << 30, scrub=scrub, items=100, depth=6, string=500)
        size = len(json.dumps(cleaned, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        for limit in (64, 512, 2048, 8192, size, size - 1, size // 2, size * 2, size * 4):
            if codec._surely_fits(cleaned, limit):
                assert size <= limit, (cleaned, limit)
                skipped += 1
            expected = _exact_small_json(copy.deepcopy(cleaned), limit)
            assert codec.small_json(value, limit, scrub=scrub, items=100, depth=6, string=500) == expected
    assert skipped > 500  # the bound does spare most encodings
