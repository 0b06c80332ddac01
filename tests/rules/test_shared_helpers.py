"""The shared helpers made cheaper for issue #24 answer exactly as their plain definitions do.

Each is compared with a direct transcription of what its docstring (or rules.md) says, on random and hostile
values: a faster helper that answered differently would change findings the golden corpus may not hold.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from collections import Counter, defaultdict
from typing import Any

import pytest

from scanner.rules.listwide import (
    COMPARISON_BUDGET,
    PAIRWISE_TOOLS,
    REJECTED_COST,
    SIMILARITY,
    _Apart,
    similar_pairs,
)
from scanner.rules.text import split_name, words
from scanner.rules.tools import ToolInfo, json_too_costly, walk_schema
from scanner.rules.vocabulary import MAX_RELATIVES, fold, fold_all, name_words, text_words
from tests.check_corpus import random_json


def _too_costly(value: Any, depth_limit: int, containers_limit: int, depth: int = 1) -> bool:
    """json_too_costly as its docstring says it, recursively."""
    if not isinstance(value, dict | list):
        return False
    if depth > depth_limit:
        return True
    children = list(value.values()) if isinstance(value, dict) else value
    nested = [child for child in children if isinstance(child, dict | list)]
    if isinstance(value, list) and len(nested) > containers_limit:
        return True
    return any(_too_costly(child, depth_limit, containers_limit, depth + 1) for child in nested)


@pytest.mark.parametrize("limits", [(1, 0), (2, 1), (3, 2), (5, 3), (30, 256)])
def test_json_too_costly_is_its_definition(limits: tuple[int, int]) -> None:
    rng = random.Random(24)
    values = [random_json(rng, 0) for _ in range(2_000)]
    answers = [json_too_costly(value, *limits) for value in values]
    assert answers == [_too_costly(value, *limits) for value in values]
    assert True in answers or limits == (30, 256)  # the small limits do cut


def test_json_too_costly_stops_on_shared_and_cyclic_values() -> None:
    shared: list[Any] = []
    for _ in range(200):
        shared = [shared, shared]  # 2**200 paths: only a depth-first search that stops at the limit ends
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert json_too_costly(shared, 30, 256)
    assert json_too_costly(cyclic, 30, 256)
    assert json_too_costly([[]] * 257, 30, 256) and not json_too_costly([[]] * 256, 30, 256)


def _children_of(schema: Any) -> bool:
    """Whether the walk could descend from a schema: it holds one of the keywords the walk follows."""
    walk = walk_schema({"type": "object", "properties": {"p": schema}})
    return any(node.tokens[:3] == ("inputSchema", "properties", "p") and len(node.tokens) > 3 for node in walk.nodes)


def test_the_walk_descends_through_every_keyword_it_knows() -> None:
    for keyword, value in [
        ("properties", {"a": {}}),
        ("items", {}),
        ("prefixItems", [{}]),
        ("anyOf", [{}]),
        ("not", {}),
        ("if", {}),
        ("additionalProperties", {}),
        ("patternProperties", {"^a": {}}),
        ("dependentSchemas", {"a": {}}),
        ("dependencies", {"a": {}}),
    ]:
        assert _children_of({keyword: value}), keyword
    assert not _children_of({"type": "string", "description": "Leaf.", 3: {"properties": {}}})


def test_fold_all_is_fold_of_each_word() -> None:
    found = ["entities", "deletes", "class", "bus", "s" * 70 + "ies", "x" * 80 + "s", "", "users'"]
    assert fold_all(found) == [fold(word) for word in found]
    assert name_words("getUserEntities") == ["get", "user", "entity"]


def _told_apart(tools: list[ToolInfo], i: int, j: int) -> bool:
    """MCP303's exceptions as rules.md states them (description words joined in pairs computed up front)."""

    def joined(text: str) -> set[str]:
        found = text_words(text)
        return set(found) | {fold(found[k] + found[k + 1]) for k in range(len(found) - 1)}

    first, other = tools[i], tools[j]
    text_i, text_j = first.description_text or "", other.description_text or ""
    lower_i = first.name.lower() if isinstance(first.name, str) else ""
    lower_j = other.name.lower() if isinstance(other.name, str) else ""
    if (len(lower_j) >= 3 and lower_j in text_i.lower()) or (len(lower_i) >= 3 and lower_i in text_j.lower()):
        return True
    if re.search(r"\binstead\b|\brather than\b|\buse [\w.-]+ (?:for|to|when)\b", text_i + "\n" + text_j, re.I):
        return True
    words_i, words_j = name_words(first.name), name_words(other.name)
    name_i, name_j = set(words_i), set(words_j)
    own_i, own_j = name_i - name_j, name_j - name_i
    if own_i and own_j and words_i[:1] == words_j[:1]:  # a same-verb family over different objects
        return True
    return bool((own_i | own_j) & (joined(text_i) | joined(text_j)))


def test_told_apart_is_its_definition() -> None:
    raw = [
        {"name": "create_functionapp", "description": "Create a Function App in a resource group."},
        {"name": "delete_functionapp", "description": "Delete a Function App from a resource group."},
        {"name": "list_directory", "description": "List a directory's entries."},
        {"name": "list_directory_with_sizes", "description": "List a directory's entries with their sizes."},
        {"name": "search_docs", "description": "Search the docs; use search_api for reference pages."},
        {"name": "search_api", "description": "Search the API reference."},
        {"name": "add_observations", "description": "Add observations to entities."},
        {"name": "delete_observations", "description": "Delete observations from entities."},
        {"name": ["not", "text"], "description": None},
        {"name": "", "description": "   "},
    ]
    tools = [ToolInfo(tool, index) for index, tool in enumerate(raw)]
    apart = _Apart(tools)
    answers = {(i, j): apart.told_apart(i, j) for i in range(len(raw)) for j in range(len(raw)) if i != j}
    assert answers == {pair: _told_apart(tools, *pair) for pair in answers}
    assert answers[(0, 1)] and answers[(2, 3)] and answers[(4, 5)] and answers[(6, 7)]
    assert not answers[(8, 9)]  # no name words, no text: nothing tells them apart


def test_split_name_marks_camel_case_boundaries_only_where_a_letter_is_upper_case() -> None:
    assert split_name("get_user_profile") == ["get", "user", "profile"]
    assert split_name("getUserProfile") == ["get", "user", "profile"]
    assert split_name("HTTPServer") == ["http", "server"]
    assert split_name("s3Bucket") == ["s3", "bucket"]
    assert split_name("aℍb") == ["a", "ℍb"]  # ℍ is upper case with no lower-case form: still a boundary
    assert split_name("ǅemal") == ["ǆemal"]  # a title-case letter is no boundary


def _similar_pairs(texts: list[str | None], budget: int, accept: Any) -> list[tuple[int, int, float, list[str]]]:
    """MCP303's candidate search as first written: one step of the budget per index entry looked at."""
    sets = [frozenset(words(text)) if text else frozenset() for text in texts]
    folded = [" ".join(text.split()) if text else None for text in texts]
    frequency = Counter(word for found in sets for word in found)
    rank = {word: place for place, word in enumerate(sorted(frequency, key=lambda word: (frequency[word], word)))}
    index: dict[str, list[int]] = defaultdict(list)
    indexed: set[str] = set()
    out = []
    for j, word_set in enumerate(sets):
        size = len(word_set)
        if not size:
            continue
        prefix = sorted(word_set, key=rank.__getitem__)[: size - math.ceil(SIMILARITY * size) + 1]
        best, stop, seen = None, len(sets), set()
        for word in prefix:
            for i in index[word]:
                if i >= stop:
                    break
                budget -= 1
                if i in seen:
                    continue
                seen.add(i)
                larger = max(len(sets[i]), size)
                shared = sets[i] & word_set
                if min(len(sets[i]), size) < SIMILARITY * larger or folded[i] == folded[j]:
                    continue
                if len(shared) < SIMILARITY * larger:
                    continue
                if not accept(i, j):
                    budget -= REJECTED_COST
                    continue
                best, stop = (i, len(shared) / larger, shared), i
                break
        if best is not None:
            out.append((best[0], j, best[1], sorted(best[2])))
        if budget <= 0:
            return out
        if folded[j] is not None and folded[j] not in indexed:
            indexed.add(folded[j])
            for word in prefix:
                index[word].append(j)
    return out


def test_similar_pairs_spends_its_budget_as_first_written() -> None:
    """The same pairs as the search first written, whether a list is compared pair by pair (short, with budget to
    spare) or through the prefix index (longer, or a budget that may run out)."""
    rng = random.Random(303)
    vocabulary = [f"w{number}" for number in range(14)]
    for _ in range(300):
        texts: list[str | None] = [
            " ".join(rng.sample(vocabulary, rng.randrange(1, 9))) if rng.random() > 0.1 else None
            for _ in range(rng.randrange(2, 2 * PAIRWISE_TOOLS))
        ]
        refused = {(rng.randrange(30), rng.randrange(30)) for _ in range(rng.randrange(40))}

        def accept(i: int, j: int, refused: set[tuple[int, int]] = refused) -> bool:
            return (i, j) not in refused

        for budget in (1, 5, 20, 60, 200, COMPARISON_BUDGET):
            assert list(similar_pairs(texts, budget, accept=accept)) == _similar_pairs(texts, budget, accept)


RELATIVES_PROBE = """
import json
from scanner.rules.tools import ToolInfo
from scanner.rules.vocabulary import ListFacts
# "invoice" in seven tools and "draft" in seven others, beside tool 0 which has both: neither is a prefix
# (shared by more than half), and tool 0 has twelve relatives, more than are kept.
names = ["invoice_draft"] + [f"invoice_{verb}" for verb in ("void", "send", "refund", "archive", "export", "merge")]
names += [f"draft_{verb}" for verb in ("pause", "share", "print", "rename", "lock", "copy")] + ["ping", "status"]
text = "Works on one invoice draft."
infos = [ToolInfo({"name": name, "description": text}, index) for index, name in enumerate(names)]
print(json.dumps(ListFacts.of(infos).relatives))
"""


def test_the_relatives_a_tool_is_given_do_not_follow_string_hashing():
    """A tool with more relatives than are kept (MCP105 names them) gets the same ones in every process: the
    word index follows each name's word order, not a set's, so two hash seeds cannot name different tools."""
    import subprocess
    import sys

    seen = {
        subprocess.run(
            [sys.executable, "-c", RELATIVES_PROBE],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert len(seen) == 1, seen
    relatives = json.loads(seen.pop())
    assert len(relatives["0"]) == MAX_RELATIVES


# Shortcuts that skip a regular expression when a text cannot hold a match: the same answer as running it.
_FRAGMENTS = [
    "model",
    "MODEL ",
    "The model should not call",
    "the model must not use ",
    "do not call this tool directly",
    "APP-ONLY",
    "for the ui only",
    "For The Viewer Only",
    "internal use only",
    "ı",
    "İ",
    "ſ",
    "\u212a",
    "call",
    "only",
    " ",
    "\n",
    ". ",
    "; ",
    "x",
    "://",
    "https://example.com/a.b",
    "HTTP://Example.com/x?y=1.",
    "see docs.example.com/path",
    "costs 12345 tokens",
    "(more than 1500",
    " characters",
    '"',
]


def _texts(seed: int, count: int = 3000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(0, 9))) for _ in range(count)]


def test_a_prefiltered_search_is_the_patterns_own() -> None:
    from scanner.rules.naming import _NOT_FOR_THE_MODEL
    from scanner.rules.text import Prefiltered

    pattern = _NOT_FOR_THE_MODEL.pattern
    found = 0
    for text in _texts(11):
        shortcut, whole = _NOT_FOR_THE_MODEL.search(text), pattern.search(text)
        assert (shortcut and shortcut.span()) == (whole and whole.span()), text
        found += whole is not None
    assert found > 300  # the texts do hold matches
    dotless = Prefiltered(re.compile(r"\binstructions\b", re.IGNORECASE), ("instruction",))
    assert dotless.search("Ignore all previous \u0131nstructions") is not None


def test_sentences_without_a_url_are_cut_as_with_the_url_pattern() -> None:
    from scanner.rules import listwide

    def split(text: str) -> list[str]:  # _split_sentences with the URL pattern always run
        urls = [match.span() for match in listwide._URL.finditer(text)]
        pieces, start = [], 0
        for mark in listwide._SENTENCE_END.finditer(text):
            if any(begin <= mark.start() < end for begin, end in urls):
                continue
            pieces.append(text[start : mark.start()])
            start = mark.end()
        return [*pieces, text[start:]]

    def sentence_words(piece: str) -> list[str]:
        found: list[str] = []
        start = 0
        for match in listwide._URL.finditer(piece):
            found += words(piece[start : match.start()])
            found.append(match.group().lower())
            start = match.end()
        return found + words(piece[start:])

    for text in _texts(12):
        assert listwide._split_sentences(text) == split(text), text
        assert listwide._sentence_words(text) == sentence_words(text), text


def test_readable_message_reads_counts_only_where_they_can_be() -> None:
    from scanner.rules.engine import _COUNT, readable_message

    for text in _texts(13):
        message = "'a' " + text.replace('"', "")
        assert readable_message(message) == _COUNT.sub(lambda match: f"{int(match[0]):,}", message), message


def test_the_sentence_end_pattern_is_the_one_written_plainly() -> None:
    from scanner.rules import listwide

    plain = re.compile(r"[.!?;]+(?=[\"'\u2019\u201d)\]*_`]*(?:\s|$))|(?<=[a-z])[.!?](?=[A-Z][a-z])|[\r\n]+")
    rng = random.Random(14)
    alphabet = [*"aZ .!?;\r\n\"')]*_`xY", "\u2019", "\u201d", "e.g.", "v1.2", "end.Next", "a.B", "Ab"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(5000)]
    for text in [*texts, *_texts(15)]:
        assert [m.span() for m in listwide._SENTENCE_END.finditer(text)] == [m.span() for m in plain.finditer(text)]
