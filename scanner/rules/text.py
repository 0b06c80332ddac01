"""Words and labels of untrusted text, shared by the tool walk (:mod:`scanner.rules.tools`), the vocabulary the
naming and list rules share (:mod:`scanner.rules.vocabulary`) and the rules themselves: a text's words (cached for
the short texts several rules read), a tool name split on punctuation and camelCase, a short printable label.

The floor under both :mod:`~scanner.rules.tools` and :mod:`~scanner.rules.vocabulary`, so neither imports the other
to read a word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

_WORD = re.compile(r"[^\W_]+")
# Texts up to this long have their words kept, in at most CACHED_TEXTS entries (a few MB at worst).
CACHED_TEXT = 1024
CACHED_TEXTS = 512
T = TypeVar("T")


def text_cache(compute: Callable[[str], list[T]]) -> Callable[[str], list[T]]:
    """``compute`` (a pure function of a text giving a list) remembered for texts up to :data:`CACHED_TEXT`
    characters, in at most :data:`CACHED_TEXTS` entries: several rules read the same description or parameter
    text. Each call gets its own list."""
    remembered = lru_cache(maxsize=CACHED_TEXTS)(lambda text: tuple(compute(text)))

    @wraps(compute)
    def cached(text: str) -> list[T]:
        return compute(text) if len(text) > CACHED_TEXT else list(remembered(text))

    return cached


@text_cache
def words(text: str) -> list[str]:
    """Lower-case runs of letters and digits (Unicode letters included), in order."""
    return fresh_words(text)


def fresh_words(text: str) -> list[str]:
    """:func:`words` without its cache, for pieces of text read once (sentences) that would only crowd it."""
    return _WORD.findall(text.lower())


def split_name(name: str) -> list[str]:
    """The words of a tool name: split on ``_``, ``-``, ``.``, other punctuation and camelCase boundaries.

    ``getUserProfile`` gives get, user, profile; ``HTTPServer`` gives http, server; ``s3Bucket`` gives s3, bucket
    (a digit run stays with the letters before it).
    """
    if name.islower():  # no upper-case letter (snake_case, kebab-case): no camelCase boundary to mark
        return words(name)
    spaced: list[str] = []
    for position, char in enumerate(name):
        if position and char.isupper():
            previous = name[position - 1]
            following = name[position + 1] if position + 1 < len(name) else ""
            if previous.islower() or previous.isdigit() or (previous.isupper() and following.islower()):
                spaced.append(" ")
        spaced.append(char)
    return words("".join(spaced))


def label(value: Any, limit: int = 80) -> str:
    """A short, printable rendering of an untrusted string for messages."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True, default=str)[:limit]
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


# Python's re.IGNORECASE matches ``i`` with ``ı`` and ``İ``, ``s`` with ``ſ`` and ``k`` with the Kelvin sign; any
# other character it matches with an ASCII letter is that letter in either case. ``str.lower`` keeps ``ı`` and
# ``ſ`` and makes ``İ`` two characters, so these four become their letters first (tests/rules/test_shared_helpers.py
# checks every code point).
_GATE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def gate_form(text: str) -> str:
    """``text`` lower-cased as a gate reads it: an ASCII word that every match of a case-insensitive pattern holds is
    in this form of any text the pattern matches (``"ınstructions"`` holds ``instruction`` here)."""
    return text.translate(_GATE_FOLDS).lower()


class Prefiltered:
    """A compiled pattern searched only in texts whose :func:`gate_form` holds one of ``words`` (lower-case ASCII),
    one of which every match holds: most descriptions hold none, and a substring test costs far less than the
    pattern tried at every position. The answer is the pattern's own."""

    def __init__(self, pattern: re.Pattern[str], words: tuple[str, ...]) -> None:
        assert all(word.isascii() and word == word.lower() for word in words), words
        self.pattern = pattern
        self.words = words

    def search(self, text: str, form: str | None = None) -> re.Match[str] | None:
        """The pattern's search of ``text``; ``form``: its :func:`gate_form` when the caller has it already."""
        if not holds_any(gate_form(text) if form is None else form, self.words):
            return None
        return self.pattern.search(text)


def holds_any(form: str, words: tuple[str, ...]) -> bool:
    """Whether a text's :func:`gate_form` holds one of ``words`` (a loop: cheaper than a generator for a handful)."""
    for word in words:  # noqa: SIM110 - twice as fast as any() over a generator
        if word in form:
            return True
    return False
