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


class Prefiltered:
    """A compiled pattern searched only in texts whose lower-case form holds one of ``words``, which every match
    of it holds (lower-cased): most descriptions hold none, and ``str.lower`` and ``in`` cost far less than the
    pattern tried at every position. The answer is the pattern's own. With ``re.IGNORECASE``, ``words`` must not
    hold ``i``, ``s`` or ``k``: those are the ASCII letters Python's matching folds with other characters (``ı``,
    ``ſ``, the Kelvin sign) that ``str.lower`` leaves as they are."""

    def __init__(self, pattern: re.Pattern[str], words: tuple[str, ...]) -> None:
        if pattern.flags & re.IGNORECASE:
            assert not any(letter in word for word in words for letter in "isk"), words
        self.pattern = pattern
        self.words = words

    def search(self, text: str) -> re.Match[str] | None:
        low = text.lower()
        if not any(word in low for word in self.words):
            return None
        return self.pattern.search(text)
