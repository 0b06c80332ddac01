"""Fuzzing the registry readers with inputs derived from the real fixtures (issue 8, deliver 4).

Every input goes through the front door, ``load_entries`` on a file, detected or read as each kind in turn, so
parsing, detection, the readers, the trust rule and the decode path are all exercised. The property: a reader
returns entries or raises :class:`InputError` (no other exception), within a bounded time and memory per
example, and every string in what it returns (what a scan stores and a dry run prints) encodes as UTF-8 and
holds no NUL. Two sources of inputs: byte-level mutations of the fixture files (flips, cuts, splices of
hostile tokens such as ``\\ud800``, ``\\u0000``, ``/*``, invalid UTF-8), and structure-level mutations of
their JSON (any value replaced by hostile JSON), rows of the full 2025-12-18 registry dump included.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from collections.abc import Iterator, Mapping
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from registry_support import FIXTURES

from scanner.errors import InputError
from scanner.models import ServerEntry
from scanner.registry import entries_to_json, load_entries
from scanner.registry.loader import KINDS

FILES = sorted(path for path in FIXTURES.iterdir() if path.suffix == ".json")
FILE_KINDS = [kind for kind in KINDS if kind != "api"]
ENVIRON = {"PATH": "/usr/bin", "HOME": "/home/x", "TOKEN": "t\ud800k"}  # a hostile value in the environment too
SETTINGS = settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
MAX_SECONDS = 30.0  # generous: a loaded machine is slow, not wrong
MAX_PEAK_BYTES = 64 * 1024 * 1024

HOSTILE_TOKENS = [
    b"\\ud800",
    b"\\udfff\\ud800",
    b"\\u0000",
    b"\x00",
    b"\xff\xfe",
    b"\xed\xa0\x80",
    b"/*",
    b"//",
    b'"',
    b"{",
    b"[",
    b",",
    b"}",
    b"http://[::1/mcp",
    b'"command": ["sh", "-c", "id"]',
    b'"metadata": {}',
]


@cache
def dump_rows() -> list[Any]:
    path = FIXTURES / "official-registry-2025-12-18.json.gz"
    return list(json.loads(gzip.decompress(path.read_bytes()))["servers"])


def hostile_text() -> st.SearchStrategy[str]:
    pieces = st.one_of(
        st.characters(), st.sampled_from(["\ud800", "\udfff", "\x00", "/*", "{x}", "${env:TOKEN}", "${input:x}"])
    )
    return st.lists(pieces, max_size=12).map("".join)


def hostile_json() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        hostile_text(),
        st.sampled_from(["http://[::1/mcp", "https://x.example.com/{v}", "stdio", "npm", "sse", "streamable-http"]),
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text(), inner, max_size=4),
        max_leaves=10,
    )


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every location in a JSON value (the root included), depth first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(document: Any, where: tuple[Any, ...], new: Any) -> Any:
    if not where:
        return new
    head, rest = where[0], where[1:]
    if isinstance(document, dict):
        return {**document, head: replaced(document[head], rest, new)}
    copy = list(document)
    copy[head] = replaced(copy[head], rest, new)
    return copy


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, ServerEntry):
        for item in fields(value):
            yield from strings(getattr(value, item.name))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def check_reader(path: Path, kind: str | None) -> None:
    """The property, for one input read one way."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        entries = load_entries(str(path), kind=kind, environ=ENVIRON, run_packages=True, run_commands=True)
    except InputError as exc:
        assert "\n" not in str(exc)
        str(exc).encode("utf-8")
        entries = []
    finally:
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < MAX_SECONDS, (kind, elapsed)
    assert peak < MAX_PEAK_BYTES, (kind, peak)
    for entry in entries:
        assert isinstance(entry, ServerEntry)
        for text in strings(entry):
            text.encode("utf-8")
            assert "\0" not in text, (kind, entry.name)
    json.dumps(entries_to_json(entries), ensure_ascii=False).encode("utf-8")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "input.json"


@SETTINGS
@given(
    source=st.sampled_from(FILES),
    cuts=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 8), st.sampled_from(HOSTILE_TOKENS)), max_size=6),
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=4),
    kind=st.sampled_from([None, *FILE_KINDS]),
)
def test_mutated_fixture_bytes(scratch: Path, source: Path, cuts: list, flips: list, kind: str | None) -> None:
    data = bytearray(source.read_bytes())
    for where, drop, token in cuts:  # remove a few bytes somewhere, put a hostile token there
        at = int(where * len(data))
        data[at : at + drop] = token
    for where, mask in flips:
        if data:
            at = min(int(where * len(data)), len(data) - 1)
            data[at] ^= mask
    scratch.write_bytes(bytes(data))
    check_reader(scratch, kind)


@pytest.mark.timeout(600)
@SETTINGS
@given(data=st.data(), kind=st.sampled_from([None, *FILE_KINDS]))
def test_mutated_fixture_structure(scratch: Path, data: st.DataObject, kind: str | None) -> None:
    source = data.draw(st.sampled_from([path for path in FILES if path.name != "registry-sample.json"] + ["dump"]))
    if source == "dump":
        rows = dump_rows()
        start = data.draw(st.integers(0, len(rows) - 5))
        document: Any = {"servers": rows[start : start + 5], "metadata": {"count": 5}}
    else:
        text = Path(source).read_text(encoding="utf-8")
        try:
            document = json.loads(text)
        except ValueError:  # the VS Code fixture has comments: mutate the raw text instead
            document = {"raw": text}
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.sampled_from(list(paths(document))))
        document = replaced(document, where, data.draw(hostile_json()))
    scratch.write_text(json.dumps(document), encoding="utf-8")  # surrogates leave as \ud800 escapes, NUL as \u0000
    check_reader(scratch, kind)
