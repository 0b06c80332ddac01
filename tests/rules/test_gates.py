"""The substring gates before MCP403's search may only skip texts the search cannot match."""

from __future__ import annotations

import random
import re

from scanner.rules.safety import _PROMOTION, _PROMOTION_GATES, promotional_phrases

CLAIMS = [
    "the best tool",
    "best-in-class",
    "the most trusted way",
    "#1",
    "Number One",
    "industry leading",
    "STATE-of-the-ART",
    "world's best",
    "unmatched",
    "unparalleled",
    "superior to",
    "instead of any other tools",
    "The only tool you should use",
]


def test_every_claim_passes_its_gate() -> None:
    for claim in CLAIMS:
        assert _PROMOTION.search(claim), claim
        assert promotional_phrases(f"A tool. {claim}, it says."), claim


def test_narrowing_words_hold_no_letter_another_character_matches() -> None:
    """A lower-case substring test misses a text only if some character matches a gate letter under
    re.IGNORECASE without lowering to it ("ſ" for "s"); the words added to narrow a gate have no such letter."""
    letters = {char for gate in _PROMOTION_GATES for word in gate[1:] for char in word}
    assert letters  # some gates are narrowed
    pattern = re.compile("[" + "".join(sorted(letters)) + "]", re.IGNORECASE)
    tricky = [
        hex(code)
        for code in range(0x80, 0x110000)
        if pattern.fullmatch(char := chr(code)) and char.lower() not in letters
    ]
    assert not tricky


def test_the_search_lookahead_skips_no_match() -> None:
    """``_PROMOTION`` starts with a lookahead of the alternatives' first characters: it must find exactly what the
    alternatives alone find, case and Unicode case folding ("ſ" for "s", "ı" for "i") included."""
    prefix = "(?=[tbmn#iswu])(?:"
    assert _PROMOTION.pattern.startswith(prefix) and _PROMOTION.pattern.endswith(")")
    bare = re.compile(_PROMOTION.pattern[len(prefix) : -1], re.IGNORECASE)
    rng = random.Random(24)
    filler = list("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ#-'’_.,\n1ſıİKµé")
    folds = {"s": "ſS", "i": "ıİI", "k": "K", "t": "T", "b": "B", "m": "M", "n": "N", "w": "W", "u": "U"}
    texts = []
    for _ in range(5_000):
        claim = "".join(rng.choice(folds.get(char, char) + char) for char in rng.choice(CLAIMS).lower())
        texts.append("".join(rng.choice(filler) for _ in range(rng.randrange(6))) + claim + rng.choice(filler))
    found = [[match.span() for match in _PROMOTION.finditer(text)] for text in texts]
    assert found == [[match.span() for match in bare.finditer(text)] for text in texts]
    assert sum(1 for spans in found if spans) > 100
