"""Rules on the tool list as a whole (MCP301-MCP308): tools a model would confuse, lists too large to send, and
doctrine or parameters copied into every tool.

Pair rules blame the first tool of a pair (in list order) and name the other in ``details``. To keep a list of
thousands of near-copies from producing millions of findings, each later tool is paired once: MCP301/MCP302 with
the first tool of its group, MCP303 with the first earlier tool it is similar to. So three look-alikes A, B, C
give (A, B) and (A, C).

Before MCP303 compares two descriptions, the sentences MCP307 finds repeated in 3 or more descriptions (shared
boilerplate such as "IMPORTANT: Always use absolute paths ...") are left out of both: they say nothing about
what sets two tools apart, and MCP307 reports them once.

MCP303 runs in far less than quadratic time on real lists: word sets are computed once, and candidate pairs come
from a prefix filter (a pair reaching 60 % overlap must share one of the rarest ``n - ceil(0.6 n) + 1`` words of
each description), then are verified exactly. A hostile list built to defeat the filter is compared only up to
:data:`COMPARISON_BUDGET` pairs. A list of up to :data:`PAIRWISE_TOOLS` tools is compared pair by pair instead, with
the same result: that costs less than building the filter's index.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence

from scanner.models import Severity, canonical_json
from scanner.rules.registry import Hit, RuleContext, register
from scanner.rules.text import fresh_words, label, split_name, text_cache, words
from scanner.rules.tools import ToolInfo, escape_token
from scanner.rules.vocabulary import fold_all, name_words, quote, text_words

SIMILARITY = 0.6
TOOLS_PROBLEM = 128
TOOLS_WARNING = 40
LIST_TOKEN_LIMIT = 20_000
# Candidate pairs MCP303 compares at most (a few seconds); real lists need a tiny fraction of it.
COMPARISON_BUDGET = 2_000_000
# What one similar pair turned down by MCP303's exceptions costs of that budget.
REJECTED_COST = 8
# Lists up to this long are compared pair by pair: building the prefix index costs more than it saves.
PAIRWISE_TOOLS = 24
# A sentence is doctrine when 3 or more tools repeat it and it has at least 12 words, or 5 or more and 8 words.
DOCTRINE_RULES = ((3, 12), (5, 8))
DOCTRINE_TOOLS = min(tools for tools, _ in DOCTRINE_RULES)
DOCTRINE_WORDS = min(length for _, length in DOCTRINE_RULES)
PARAM_TOOLS = 5
PARAM_TOKEN_LIMIT = 500
# A parameter that is not a shared option fires only when each copy costs at least this much (MCP308).
PARAM_COPY_TOKENS = 100
# Name words that make a parameter a shared option, one the server's configuration can hold (MCP308), folded.
SHARED_OPTION_WORDS = frozenset(
    (
        *("auth", "token", "credential", "tenant", "subscription", "org", "organization", "account", "region"),
        *("user", "email", "retry", "timeout", "api", "version", "locale", "lang"),
    )
)


def shared_option(name: str) -> bool:
    """Whether a parameter's name names a shared option (its folded words include one of
    :data:`SHARED_OPTION_WORDS`): ``api_key``, ``tenantId``, ``max_retries``; not ``page_id`` or ``issue_key``."""
    return not SHARED_OPTION_WORDS.isdisjoint(name_words(name))


# A mark ends a sentence only before white space or the end of the text (closing quotes, brackets or emphasis may
# stand between): the dots of `example.com/a/b`, `v1.2` or `e.g.,` and the `?` of a query string end nothing, so an
# example URL is not cut into "sentences" (catalogue 6 labels: "com/pipelines/gh/organization/project/123").
# A mark straight before a capitalised word ("knowledge.This tool is") still ends one: a space left out. Written
# for speed: the leading lookahead lets the search pass every other character at once, and the second alternative
# checks the letter before its mark after it (the same matches as ``[.!?;]+(?=...)|(?<=[a-z])[.!?](?=[A-Z][a-z])|
# [\r\n]+``, about three times faster on descriptions; tests/rules/test_shared_helpers.py holds the two together).
_SENTENCE_END = re.compile(
    r"(?=[.!?;\r\n])(?:[.!?;]+(?=[\"'\u2019\u201d)\]*_`]*(?:\s|$))|[.!?](?<=[a-z][.!?])(?=[A-Z][a-z])|[\r\n]+)"
)


# A URL is one word of a sentence: an example address is one thing said, not eight ("* Job URL: https://app.
# circleci.com/pipelines/gh/organization/project/123" is three words, too short for doctrine).
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S*[^\s.,;:!?)\]'\"`]", re.IGNORECASE)


def _sentence_words(piece: str) -> list[str]:
    if "://" not in piece:  # no URL (every one has it): the regular expression need not look
        return fresh_words(piece)
    found: list[str] = []
    start = 0
    for match in _URL.finditer(piece):
        found += fresh_words(piece[start : match.start()])
        found.append(match.group().lower())
        start = match.end()
    return found + fresh_words(piece[start:])


def _split_sentences(text: str) -> list[str]:
    """The text cut at each sentence end that is not inside a URL."""
    urls = [match.span() for match in _URL.finditer(text)] if "://" in text else []
    pieces, start = [], 0
    for mark in _SENTENCE_END.finditer(text):
        if any(begin <= mark.start() < end for begin, end in urls):
            continue
        pieces.append(text[start : mark.start()])
        start = mark.end()
    return [*pieces, text[start:]]


@text_cache  # MCP303 and MCP307 split the same descriptions
def sentences(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The sentences of a description with their words: text between ``.``, ``!``, ``?`` or ``;`` followed by
    white space or the end of the text (closing quotes and brackets may stand between), or a line break."""
    out = []
    for piece in _split_sentences(text):
        if not piece:  # before the first mark or after the last: no words
            continue
        found = tuple(_sentence_words(piece))
        if found:
            out.append((" ".join(piece.split()), found))
    return out


def _doctrine_size(words_count: int, tools: int) -> bool:
    return any(tools >= at_least and words_count >= length for at_least, length in DOCTRINE_RULES)


def doctrine(descriptions: Sequence[str | None]) -> dict[tuple[str, ...], list[int]]:
    """Repeated sentences: of at least 12 words in 3 or more descriptions, or of at least 8 words in 5 or more;
    their words -> the indexes that have them."""
    return {key: list(indexes) for key, indexes in _doctrine(tuple(descriptions)).items()}


@functools.lru_cache(maxsize=2)  # MCP303 and MCP307 ask for the same list's, one after the other
def _doctrine(descriptions: tuple[str | None, ...]) -> dict[tuple[str, ...], list[int]]:
    where: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, text in enumerate(descriptions):
        if not text:
            continue
        for key in dict.fromkeys(key for _, key in sentences(text) if len(key) >= DOCTRINE_WORDS):
            where[key].append(index)
    return {key: indexes for key, indexes in where.items() if _doctrine_size(len(key), len(indexes))}


def without_doctrine(descriptions: Sequence[str | None]) -> list[str | None]:
    """Each description with its repeated sentences (see :func:`doctrine`) left out; None stays None."""
    repeated = doctrine(descriptions)
    if not repeated:
        return list(descriptions)
    out: list[str | None] = []
    for text in descriptions:
        if text is None:
            out.append(None)
            continue
        kept = [sentence for sentence, key in sentences(text) if key not in repeated]
        out.append(" ".join(kept))
    return out


def _fold(text: str) -> str:
    return " ".join(text.split())


def _pairs_by_key(tools: Sequence[ToolInfo], keys: dict[int, str]) -> Iterator[tuple[ToolInfo, ToolInfo]]:
    first: dict[str, ToolInfo] = {}
    for tool in tools:
        key = keys.get(tool.index)
        if key is None:
            continue
        if key in first:
            yield first[key], tool
        else:
            first[key] = tool


@register(
    "MCP301",
    "names-confusable",
    Severity.PROBLEM,
    hint="Name tools by what sets them apart.",
    scope="list",
    doc="""Checks that no two tool names are equal once case, `_` and `-` are ignored (exact duplicates
    included). A model that writes `get_user` for `getUser` calls the wrong tool or one that does not exist,
    and some clients drop one of two equal names. Bad: `search_docs` and `searchDocs`. Good: `search_docs` and
    `search_issues`.""",
)
def names_confusable(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    keys = {
        tool.index: tool.name.lower().replace("_", "").replace("-", "")
        for tool in tools
        if isinstance(tool.name, str) and tool.name
    }
    for first, other in _pairs_by_key(tools, keys):
        same = first.name == other.name
        yield Hit(
            f"{first.subject} and {other.display} (tool #{other.index}) "
            + ("have the same name." if same else "differ only in case, _ or -."),
            "/name",
            {"other": other.tool_name, "other_index": other.index, "identical": same},
            tool_index=first.index,
        )


@register(
    "MCP302",
    "descriptions-identical",
    Severity.PROBLEM,
    hint="Say what sets them apart; a model picks tools by their descriptions.",
    scope="list",
    doc="""Checks that no two tools have the same non-blank description (after trimming and folding white
    space). A model picks tools by their descriptions; with two equal ones it picks at random. Bad: `list_open`
    and `list_closed` both "List issues.". Good: "List open issues, newest first." and "List closed issues,
    most recently closed first.\"""",
)
def descriptions_identical(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    keys = {tool.index: _fold(text) for tool in tools if (text := tool.description_text) is not None}
    for first, other in _pairs_by_key(tools, keys):
        yield Hit(
            f"{first.subject} and {other.display} have the same description.",
            "/description",
            {"other": other.tool_name, "other_index": other.index},
            tool_index=first.index,
        )


def similar_pairs(
    descriptions: Sequence[str | None],
    budget: int = COMPARISON_BUDGET,
    compared: Sequence[str | None] | None = None,
    accept: Callable[[int, int], bool] | None = None,
) -> Iterator[tuple[int, int, float, list[str]]]:
    """(i, j, share, shared words) for each j paired with the first earlier i whose description is similar.

    Similar: not identical after folding white space, and the shared distinct words (of ``compared``, the texts
    whose words are compared; the descriptions themselves by default) are at least 60 % of the distinct words
    of the longer one (the one with more distinct words). At most ``budget`` candidate pairs are looked at; a
    list needing more (thousands of tools written to defeat the prefix filter) is reported only as far as the
    budget reached. ``accept(i, j)``, when given, can turn down a similar pair (MCP303's exceptions); the
    search then goes on to the next earlier candidate.
    """
    sets: list[frozenset[str]] = []
    folded: list[str | None] = []
    for position, text in enumerate(descriptions):
        source = text if compared is None else compared[position]
        sets.append(frozenset(words(source)) if text and source else frozenset())
        folded.append(_fold(text) if text else None)
    sizes = [len(found) for found in sets]
    count = len(sets)
    if count <= PAIRWISE_TOOLS and count * sum(sizes) + REJECTED_COST * count * count < budget:
        yield from _pairwise(sets, sizes, folded, accept)
        return
    frequency: Counter[str] = Counter()
    for present in sets:
        frequency.update(present)
    # Each word's place in (frequency, word) order, so each description's words sort by it with no key per word
    # (sorted by word, then stably by frequency: no Python key function).
    ordered_words = sorted(frequency)
    ordered_words.sort(key=frequency.__getitem__)
    rank = {word: place for place, word in enumerate(ordered_words)}
    index: dict[str, list[int]] = defaultdict(list)
    indexed: set[str] = set()
    for j, word_set in enumerate(sets):
        size = sizes[j]
        if not size:
            continue
        ordered = sorted(word_set, key=rank.__getitem__)
        prefix = ordered[: size - math.ceil(SIMILARITY * size) + 1]
        best: tuple[int, float, frozenset[str]] | None = None
        stop = len(sets)  # candidates from here on cannot beat the best one found (none yet: every index is lower)
        seen: set[int] = set()
        for word in prefix:
            for i in index[word]:
                if i >= stop:
                    break
                budget -= 1
                if i in seen:
                    continue
                seen.add(i)
                other = sizes[i]
                larger = other if other > size else size
                least = SIMILARITY * larger
                if (other if other < size else size) < least or folded[i] == folded[j]:
                    continue
                shared = sets[i] & word_set
                if len(shared) < least:
                    continue
                if accept is not None and not accept(i, j):
                    budget -= REJECTED_COST  # an exception is dearer to test than an overlap
                    continue
                best = (i, len(shared) / larger, shared)
                stop = i
                break
        if best is not None:
            yield best[0], j, best[1], sorted(best[2])
        if budget <= 0:
            return
        # Only the first of identical descriptions is indexed: it is always an earlier, equally good partner.
        text = folded[j]
        if text is not None and text not in indexed:
            indexed.add(text)
            for word in prefix:
                index[word].append(j)


def _pairwise(
    sets: Sequence[frozenset[str]],
    sizes: Sequence[int],
    folded: Sequence[str | None],
    accept: Callable[[int, int], bool] | None,
) -> Iterator[tuple[int, int, float, list[str]]]:
    """:func:`similar_pairs` by comparing each description with every earlier candidate, for a short list whose
    budget cannot run out: the same pairs, for less than building the prefix index costs. The candidates are the
    ones the index would hold (the first of identical descriptions, with words), and the first similar one that
    ``accept`` takes is the one the index search ends on, since the prefix filter misses no similar pair."""
    candidates: list[int] = []
    indexed: set[str] = set()
    for j, word_set in enumerate(sets):
        size = sizes[j]
        if not size:
            continue
        text = folded[j]
        for i in candidates:
            other = sizes[i]
            larger = other if other > size else size
            least = SIMILARITY * larger
            if (other if other < size else size) < least or folded[i] == text:
                continue
            shared = sets[i] & word_set
            if len(shared) < least or (accept is not None and not accept(i, j)):
                continue
            yield i, j, len(shared) / larger, sorted(shared)
            break
        if text is not None and text not in indexed:
            indexed.add(text)
            candidates.append(j)


def _joined_pairs(found: Sequence[str]) -> frozenset[str]:
    """Each two adjacent words of a description joined and folded (``functionapp`` for "Function App")."""
    return frozenset(fold_all([found[k] + found[k + 1] for k in range(len(found) - 1)]))


# A tool's name words, description words (folded), lower-case name and description.
_Facts = tuple[frozenset[str], frozenset[str], str, str]


class _Apart:
    """What MCP303's exceptions read of each tool, computed once: name words, description words, texts; the
    description's joined word pairs only when its plain words do not already decide."""

    def __init__(self, tools: Sequence[ToolInfo]) -> None:
        self.tools = tools
        self._seen: list[_Facts | None] = [None] * len(tools)
        self._pairs: dict[int, frozenset[str]] = {}

    def _facts(self, index: int) -> _Facts:
        """A tool's name words, description words, lower-case name and description, computed when first asked
        for."""
        found = self._seen[index]
        if found is None:
            tool = self.tools[index]
            text = tool.description_text or ""
            name = tool.name.lower() if isinstance(tool.name, str) else ""
            found = (
                frozenset(tool.cache.get("name_words") or name_words(tool.name)),
                frozenset(text_words(text)),
                name,
                text.lower(),
            )
            self._seen[index] = found
        return found

    def _in_pairs(self, index: int, own: frozenset[str]) -> bool:
        """Whether one of ``own`` is among the adjacent words of tool ``index``'s description joined."""
        pairs = self._pairs.get(index)
        if pairs is None:
            pairs = self._pairs[index] = _joined_pairs(text_words(self.tools[index].description_text or ""))
        return not own.isdisjoint(pairs)

    def told_apart(self, i: int, j: int) -> bool:
        """(a) either description names the other tool, or says "instead", "rather than" or "use X for"; (b) the
        names are a same-verb family over different objects (`update_person`/`update_company`: each name has a
        word the other lacks, and the first words are equal); (c) either description holds a word of either
        name's distinguishing part."""
        seen = self._seen
        name_i, words_i, lower_i, text_i = seen[i] or self._facts(i)
        name_j, words_j, lower_j, text_j = seen[j] or self._facts(j)
        if (len(lower_j) >= 3 and lower_j in text_i) or (len(lower_i) >= 3 and lower_i in text_j):
            return True
        if _USAGE_CLAUSE.search(text_i) or _USAGE_CLAUSE.search(text_j):
            return True
        own_i, own_j = name_i - name_j, name_j - name_i
        first_i, first_j = self._first_word(i), self._first_word(j)
        if own_i and own_j and first_i is not None and first_i == first_j:
            return True
        own = own_i | own_j
        if not own:
            return False
        return (
            not own.isdisjoint(words_i)
            or not own.isdisjoint(words_j)
            or self._in_pairs(i, own)
            or self._in_pairs(j, own)
        )

    def _first_word(self, index: int) -> str | None:
        """The first word of a tool's name (its verb, in `update_person`), folded as name words are."""
        name = self.tools[index].name
        found = fold_all(split_name(name)[:1]) if isinstance(name, str) else []
        return next(iter(found), None)


# A clause that tells a model when to pick one tool over another (MCP303: such descriptions tell tools apart).
_USAGE_CLAUSE = re.compile(r"\binstead\b|\brather than\b|\buse [\w.-]+ (?:for|to|when)\b", re.IGNORECASE)


@register(
    "MCP303",
    "descriptions-similar",
    Severity.WARNING,
    hint="Say in each when to use it instead of the other.",
    scope="list",
    status="removed",
    doc="""Retired in catalogue 6 (it never runs; the code is never reused): 9 of its 10 findings on hand-labelled
    real lists were wrong, and tightened as rules.md's catalogue 6 says it fired once on the lists kept here,
    wrongly (`maps_geocode`/`maps_reverse_geocode`, told apart by word order). MCP302 (identical descriptions)
    stays. What it checked: Warns when two descriptions are not identical but their shared distinct words are at
    least 60 % of the
    distinct words of the longer one (words: lower-case runs of letters and digits; the longer description is
    the one with more distinct words). Sentences that MCP307 finds repeated are left out first: shared
    boilerplate does not make two tools alike. Fires only when the descriptions do not tell the two apart; not
    reported when (a) either description names the other tool, or says "instead", "rather than" or "use X
    for/to/when"; (b) the names are a same-verb family over different objects (each name has a word the other
    lacks and their first words are equal: `update_person`/`update_company`, `create_branch`/`create_issue`);
    or (c) either description holds a word of either name's distinguishing part (folded, so "observations"
    matches `observation`; two adjacent words joined also count, so `functionapp` matches "Function App"):
    `list_directory`/`list_directory_with_sizes` with "including sizes" does not fire, `search_docs`/
    `search_docs_v2` with "Search the docs for a phrase." and "Search the docs for a keyword." does. A model
    cannot tell such tools apart and picks one by chance. The message quotes both descriptions. Bad: "Search the
    docs for a phrase."
    and "Search the docs for a keyword.". Good: say in each when to use it, "Full-text search in the guides;
    use search_api for reference pages.\"""",
)
def descriptions_similar(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    texts = [tool.description_text for tool in tools]
    apart = _Apart(tools)

    def accept(i: int, j: int) -> bool:
        return not apart.told_apart(i, j)

    for i, j, share, shared in similar_pairs(texts, compared=without_doctrine(texts), accept=accept):
        first, other = tools[i], tools[j]
        yield Hit(
            f"{first.subject} and {other.display} have similar descriptions ({round(share * 100)} % of words "
            f"shared): {quote(texts[i] or '', 80)} and {quote(texts[j] or '', 80)}.",
            "/description",
            {
                "other": other.tool_name,
                "other_index": other.index,
                "similarity": round(share, 3),
                "shared_words": shared[:40],
            },
            tool_index=first.index,
        )


@register(
    "MCP304",
    "tools-over-128",
    Severity.PROBLEM,
    hint="Offer fewer, or split the server.",
    scope="list",
    doc="""Checks that the list has at most 128 tools: OpenAI rejects a request with more. Bad: one server
    exposing every endpoint of an API as 300 tools. Good: a few dozen task-level tools, or one server per area.""",
)
def tools_over_128(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    if len(tools) > TOOLS_PROBLEM:
        yield Hit(
            f"The list has {len(tools)} tools (more than {TOOLS_PROBLEM}); OpenAI rejects it.",
            details={"count": len(tools)},
        )


@register(
    "MCP305",
    "tools-over-40",
    Severity.WARNING,
    hint="A model chooses worse among many; offer fewer at once or split by topic.",
    scope="list",
    doc="""Warns about a list of 41 to 128 tools (above 128, MCP304 fires instead). The more tools a model sees,
    the more often it picks the wrong one, and the list is paid for on every turn. Bad: 90 tools always on. Good:
    the 20 that matter for the task, the rest in a second server or behind a toolset switch.""",
)
def tools_over_40(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    if TOOLS_WARNING < len(tools) <= TOOLS_PROBLEM:
        yield Hit(
            f"The list has {len(tools)} tools (more than {TOOLS_WARNING}).",
            details={"count": len(tools)},
        )


@register(
    "MCP306",
    "list-over-20k-tokens",
    Severity.WARNING,
    hint="Shorten descriptions and schemas, or offer fewer tools.",
    scope="list",
    doc="""Warns when the list costs more than 20 000 tokens per turn with the most expensive provider (as
    counted by Fathom's provider views). That is a tenth of a 200k context gone before the conversation starts,
    on every turn. Bad: 60 tools with manual-length descriptions. Good: short descriptions, compact schemas,
    fewer tools.""",
)
def list_over_20k_tokens(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    if ctx.list_tokens_max > LIST_TOKEN_LIMIT:
        yield Hit(
            f"The list costs {ctx.list_tokens_max} tokens per turn (more than {LIST_TOKEN_LIMIT}).",
            details={"tokens": ctx.list_tokens_max},
        )


@register(
    "MCP307",
    "doctrine-repeated",
    Severity.WARNING,
    hint=(
        "Say it once, in the server's instructions or an Agent Skill: every copy is read on every turn, "
        "and copies drift apart."
    ),
    scope="list",
    status="stable",
    doc="""Warns when the same sentence appears in the descriptions of 3 or more tools and has at least 12 words, or of
    5 or more tools and has at least 8 words (a sentence: the text between `.`, `!`, `?`, `;` or a line break, compared
    as its words; a mark ends a sentence only before white space or the end of the text, or straight before a
    capitalised word, and never inside a URL, which counts as one word); short per-tool facts shared by a few tools are
    not doctrine. One finding per repeated sentence, on the first tool that has it, with the tools and what the copies
    cost per turn together (tokens with the most expensive provider). Doctrine pasted into every description is read
    again for every tool on every turn, and the copies drift apart as the server changes. A sentence that documents one
    parameter every one of those tools has (it begins, after a bullet, with the parameter's name and a colon: "-
    projectSlug: The project slug obtained from listFollowedProjects") is not reported: it belongs to each tool's own
    parameter (its schema description), not to the instructions (catalogue 6 labels: 6 of the 8 wrong findings were such
    lines). Nor is a bullet line documenting a named field, a result's or a parameter's: a bullet, then an identifier
    (snake_case or camelCase) or a name with a type in brackets, then a colon ("- ratelimit_remain (int): number of API
    requests remaining"); "- Note: always call list_projects first" still counts. Nor is a sentence saying what an
    omitted input defaults to ("If no payment method is provided, your default payment method will be used"); "If
    no results are found, do not retry the same query" still counts. Catalogue 6 labels: an example URL cut
    at its dots and output-field lines were the other wrong findings. Bad: "IMPORTANT: Always use absolute paths for
    reliability, relative paths may fail" at the end of twenty descriptions. Good: say it once in the server's
    instructions.""",
)
def doctrine_repeated(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    texts = [tool.description_text for tool in tools]
    repeated = doctrine(texts)
    for key, indexes in sorted(repeated.items(), key=lambda item: (item[1][0], item[1])):
        first = tools[indexes[0]]
        sentence = next(text for text, found in sentences(texts[indexes[0]] or "") if found == key)
        if _FIELD_LINE.match(sentence) or _DEFAULT_LINE.search(sentence):
            continue
        if documents_parameter(sentence, [tools[index] for index in indexes]):
            continue
        one, method = ctx.cost(sentence)
        total = one * len(indexes)
        names = [tools[index].tool_name for index in indexes]
        yield Hit(
            f'{first.subject} and {len(indexes) - 1} other tools repeat the sentence "{label(sentence, 80)}" '
            f"({total} tokens per turn together).",
            "/description",
            {
                "sentence": label(sentence, 500),
                "tools": names[:40],
                "count": len(indexes),
                "tokens": total,
                "method": method,
            },
            tool_index=first.index,
        )


# A sentence that documents one parameter: an optional bullet or number, then the parameter's name (backticked or
# not, a type in brackets allowed) and a colon, as in "- projectSlug: The project slug ..." (MCP307).
_PARAMETER_LINE = re.compile(
    r"^(?:[-*\u2022]\s*|\d{1,2}[.)]\s*)?`?(?P<name>[A-Za-z_][\w.-]{0,63})`?\s*(?:[(\[][^)\]]{0,60}[)\]])?\s*:"
)


# A bullet line documenting a named field (a result's or a parameter's): a bullet, then a name that is an
# identifier (snake_case or camelCase) or any name followed by a type in brackets, then a colon, as in
# "- ratelimit_remain (int): number of API requests remaining" (MCP307). "- Note: always call X first" is no field.
_FIELD_TYPE = (
    r"[(\[]\s*(?i:(?:optional\s*,?\s*)?(?:str|string|int|integer|float|double|number|bool|boolean|array|list|object"
    r"|dict|map|null|none|any|date|datetime|uuid)\b)[^)\]]{0,40}[)\]]"
)
_FIELD_LINE = re.compile(
    r"^[-*\u2022]\s*`?(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[A-Za-z_][\w.-]{0,63}`?\s*"
    + _FIELD_TYPE
    + r")`?\s*(?:"
    + _FIELD_TYPE
    + r")?\s*:"
)


# A sentence that says what an omitted input defaults to: "If no payment method is provided, your default payment
# method will be used" (MCP307). It documents that tool's parameter; "If no results are found, do not retry" does not.
_DEFAULT_LINE = re.compile(
    r"^if no \w+(?: \w+){0,3} (?:is|are) (?:provided|given|specified|passed|supplied|set)\b.*\bdefault",
    re.IGNORECASE,
)


def _folded_parameter(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def documents_parameter(sentence: str, tools: Sequence[ToolInfo]) -> bool:
    """Whether a repeated sentence documents one parameter that every tool repeating it has (at any depth, compared
    ignoring case, ``_`` and ``-``): that line belongs to each tool's own parameter, not to doctrine said once."""
    match = _PARAMETER_LINE.match(sentence)
    if match is None:
        return False
    name = _folded_parameter(match.group("name"))
    return all(
        any(node.kind == "property" and _folded_parameter(str(node.name)) == name for node in tool.params)
        for tool in tools
    )


def _canonical(value: object) -> str | None:
    try:
        return canonical_json(value)
    except (RecursionError, TypeError, ValueError):
        return None


@register(
    "MCP308",
    "params-repeated",
    Severity.WARNING,
    hint=(
        "Set shared options (authentication, retries, tenancy) once in the server's configuration, or describe "
        "them once in its instructions: every copy is read on every turn."
    ),
    scope="list",
    status="stable",
    doc="""Warns when the same root parameter (the same name and the same schema, compared as canonical JSON)
    appears in 5 or more tools, its copies together cost more than 500 tokens per turn with the most
    expensive provider, **and** either its name names a shared option (its words include auth, token,
    credential, tenant, subscription, org, organization, account, region, user, email, retry, timeout, api,
    version, locale or lang) or each copy costs at least 100 tokens: a parameter every tool acts on, such as
    `page_id`, `issue_key` or `filename`, cannot move to configuration. One finding per parameter name, on the
    first tool that has it, with the tools and the cost. A server that copies its authentication, retry and
    paging options onto every tool pays for them once per tool on every turn (one real server spends about
    40 % of its list this way). Bad: `api_key`, `timeout`, `max_retries` with long descriptions on 200 tools.
    Good: set them once in the server's configuration.""",
)
def params_repeated(tools: Sequence[ToolInfo], ctx: RuleContext) -> Iterator[Hit]:
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for position, tool in enumerate(tools):  # positions in ``tools``: the engine may pass the model's part only
        schema = tool.schema
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            continue
        for name, sub in properties.items():
            text = _canonical(sub)
            if isinstance(name, str) and text is not None:
                groups[(name, text)].append(position)
    best: dict[str, tuple[int, str, list[int], int, str]] = {}
    for (name, text), indexes in groups.items():
        if len(indexes) < PARAM_TOOLS:
            continue
        one, method = ctx.cost(f"{json.dumps(name, ensure_ascii=False)}: {text}")
        total = one * len(indexes)
        if total <= PARAM_TOKEN_LIMIT or not (one >= PARAM_COPY_TOKENS or shared_option(name)):
            continue  # a parameter every tool acts on (page_id, issue_key) cannot move to configuration
        if name not in best or total > best[name][0]:
            best[name] = (total, text, indexes, one, method)
    for name, (total, _text, indexes, one, method) in sorted(best.items(), key=lambda item: item[1][2][0]):
        first = tools[indexes[0]]
        yield Hit(
            f"{first.subject} and {len(indexes) - 1} other tools carry the same parameter {label(name, 60)!r} "
            f"({total} tokens per turn together).",
            "/inputSchema/properties/" + escape_token(name),
            {
                "parameter": label(name, 200),
                "tools": [tools[index].tool_name for index in indexes][:40],
                "count": len(indexes),
                "tokens": total,
                "tokens_each": one,
                "method": method,
            },
            tool_index=first.index,
        )
