"""The words the naming and list rules share (rules.md, "Words used by MCP103, MCP105, MCP106, MCP111 and MCP303").

- :func:`fold`: a word compared *folded*: a possessive ``'s`` dropped, ``ies`` -> ``y``, otherwise a trailing
  ``s`` (not ``ss``) removed when 4 or more letters remain, so ``entities``/``entity`` and ``deletes``/``delete``
  match.
- *read verbs*, *write verbs*, *destructive verbs*: fixed lists; a *read name* has a read verb and no write verb,
  a *write name* the reverse.
- *prefix words*: words more than half of the list's tools (and at least 3) have in their names (``puppeteer_``);
  ignored when a name is read for verbs or relatives.
- a *relative*: another tool whose name shares a word of 4 or more letters that is neither a verb nor a prefix
  word.
- a *usage clause*: a phrase saying when (not) to use the tool.

:class:`ListFacts` computes the list-wide parts once (the engine attaches it to every
:class:`~scanner.rules.tools.ToolInfo`), so a per-tool rule can ask for a tool's relatives in constant time.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scanner.rules.text import label, split_name, text_cache, words


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


READ_VERBS = frozenset(
    _words(
        "get list read search find fetch query describe show view count lookup check inspect browse preview resolve "
        "validate explain summarize retrieve"
    )
)
DESTRUCTIVE_VERBS = _words(
    "delete remove drop clear purge destroy erase wipe truncate overwrite reset revoke cancel kill terminate "
    "uninstall unlink"
)
WRITE_VERBS = frozenset(
    _words(
        "create add insert update edit set modify patch put rename move copy write save upload import send post "
        "publish reply comment invite share assign unassign merge push commit deploy approve reject archive "
        "transfer pay charge submit install apply replace"
    )
) | frozenset(DESTRUCTIVE_VERBS)
VERBS = READ_VERBS | WRITE_VERBS
# Words that make ``add`` arithmetic (rules.md *arithmetic add*), folded as name words are.
NUMBER_WORDS = frozenset(_words("number value integer ints int float two sum"))
RELATIVE_MIN_LETTERS = 4
MAX_RELATIVES = 5

_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b", re.IGNORECASE)
USAGE_CLAUSE = re.compile(
    r"\buse\s+(?:(?:this|it|this\s+tool)\s+)?(?:when|to|for|if|before|after|only|instead)\b"
    r"|\bwhen\s+(?:you|the\s+user|a\s+user|asked)\b"
    r"|\binstead\s+of\b|\brather\s+than\b|\bdo\s+not\s+use\b|\bdon['’]t\s+use\b|\bnot\s+for\b"
    r"|\bfor\s+example\b|\be\.g\.|\bsuch\s+as\b|\buseful\s+(?:for|when)\b"
    r"|\bcall\s+(?:this|it)\s+(?:when|before|after)\b|\bonly\s+(?:when|if|for)\b|\bprefer",
    re.IGNORECASE,
)
QUOTE_LIMIT = 120


FOLDED_WORD = 64  # words up to this long are remembered, in at most 65,536 entries (a few MB at worst)


def fold(word: str) -> str:
    """A lower-case word folded for comparison (see the module docstring)."""
    return _fold(word) if len(word) > FOLDED_WORD else _folded(word)


@functools.lru_cache(maxsize=1 << 16)  # rules fold the same few hundred words of a list many times over
def _folded(word: str) -> str:
    return _fold(word)


def fold_all(found: Iterable[str]) -> list[str]:
    """:func:`fold` of each word, in order (one call for a description's few hundred words)."""
    folded = _folded
    return [folded(word) if len(word) <= FOLDED_WORD else _fold(word) for word in found]


def _fold(word: str) -> str:
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) - 1 >= 4:
        return word[:-1]
    return word


@text_cache
def text_words(text: str) -> list[str]:
    """The folded words of a description, possessive ``'s`` dropped first."""
    if "'" in text or "’" in text:  # the only characters a possessive starts with
        text = _POSSESSIVE.sub("", text)
    return fold_all(words(text))


def name_words(name: object) -> list[str]:
    """The folded words of a tool name (split on ``_``, ``-``, ``.``, ``/`` and camelCase); none for a non-string."""
    return fold_all(split_name(name)) if isinstance(name, str) else []


def has_usage_clause(text: str, own: object = None, names: frozenset[str] = frozenset()) -> bool:
    """A usage clause (the phrases above), or the text names another tool of the list (``names``)."""
    return USAGE_CLAUSE.search(text) is not None or names_another_tool(text, own, names)


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Untrusted text quoted for a message: white space folded, non-printables escaped, capped, in double quotes."""
    return '"' + label(" ".join(text.split()), limit).replace('"', "'") + '"'


@dataclass(frozen=True)
class NameReading:
    """What a name's words say: its verbs (prefix words left out) and whether it reads, writes or destroys."""

    words: tuple[str, ...]
    destructive_verb: str | None
    reads: bool
    writes: bool

    @property
    def read_name(self) -> bool:
        return self.reads and not self.writes

    @property
    def write_name(self) -> bool:
        return self.writes and not self.reads

    @property
    def verb(self) -> str | None:
        """The first read or write verb of the name (for messages)."""
        return next((word for word in self.words if word in VERBS), None)


def read_name(name: object, prefixes: Iterable[str] = (), known: Sequence[str] | None = None) -> NameReading:
    """Read a tool name: its folded words without prefix words, its destructive verb, read and write verbs.
    ``known``: the name's words when already computed."""
    skip = frozenset(prefixes)
    found = tuple(word for word in (name_words(name) if known is None else known) if word not in skip)
    # Verbs are matched on both the raw and the folded form: "deletes" folds to "delete", "lists" to "list".
    destructive = next((word for word in found if word in DESTRUCTIVE_VERBS), None)
    if arithmetic_add(found):  # a calculator's `add` changes nothing: neither a read nor a write name
        return NameReading(words=found, destructive_verb=None, reads=False, writes=False)
    return NameReading(
        words=found,
        destructive_verb=destructive,
        reads=any(word in READ_VERBS and not _list_noun(found, at) for at, word in enumerate(found)),
        writes=any(word in WRITE_VERBS for word in found),
    )


# Verbs after which `list` is the thing written, not a read (`insert_list_item`, `add_to_list`, `create_list`).
_LIST_NOUN_AFTER = frozenset(("insert", "add", "create", "delete"))


def _list_noun(found: Sequence[str], at: int) -> bool:
    """Whether ``found[at]`` is `list` used as a noun: a verb of :data:`_LIST_NOUN_AFTER` comes before it."""
    return found[at] == "list" and any(word in _LIST_NOUN_AFTER for word in found[:at])


def arithmetic_add(found: Sequence[str]) -> bool:
    """*Arithmetic add*: a name's words (prefix words aside) are ``add`` alone or with only number words."""
    return "add" in found and all(word == "add" or word in NUMBER_WORDS for word in found)


def names_another_tool(text: str, own: object, names: frozenset[str]) -> bool:
    """Whether ``text`` names a tool of the list other than ``own`` (its exact name, as a whole word)."""
    if not names:
        return False
    for token in _NAME_TOKEN.findall(text):
        if token != own and token in names:
            return True
        stripped = token.strip(".-")  # a name at the end of a sentence ("... use list_files.")
        if stripped != token and stripped != own and stripped in names:
            return True
    return False


_NAME_TOKEN = re.compile(r"[A-Za-z0-9_.-]+")


class ListedTool(Protocol):
    """What :meth:`ListFacts.of` reads of a tool: a :class:`~scanner.rules.tools.ToolInfo`, named by what it offers so
    that this module, a floor above :mod:`~scanner.rules.tools` (whose tools hold their list's facts), does not
    import it."""

    index: int
    name: Any
    cache: dict[str, Any]

    @property
    def tool_name(self) -> str: ...

    @property
    def description_text(self) -> str | None: ...


@dataclass
class ListFacts:
    """List-wide facts the per-tool rules read: prefix words and each tool's relatives, computed once."""

    prefixes: frozenset[str] = frozenset()
    relatives: dict[int, list[int]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    tool_names: frozenset[str] = frozenset()
    """Every name of the list that is a string (a description naming one has a usage clause)."""

    @classmethod
    def of(cls, tools: Sequence[ListedTool], compared: Callable[[], Sequence[str | None]] | None = None) -> ListFacts:
        """The facts of ``tools``. ``compared`` gives the descriptions a relative's similarity is measured on
        (the engine passes them with the list's repeated sentences left out, as MCP303 compares them); asked for
        only when two names share a word. Without it, the descriptions themselves."""
        per_tool = []
        for tool in tools:
            found = tool.cache.get("name_words")
            if found is None:
                found = tool.cache["name_words"] = name_words(tool.name)
            # Each word once, in the name's order (not a set's): which relatives are named when a tool has more
            # than MAX_RELATIVES must not follow the process's string hashing.
            per_tool.append(tuple(dict.fromkeys(found)))
        counts: Counter[str] = Counter()
        for found in per_tool:
            counts.update(found)
        # A verb most tools share ("create" on a server of creators) is still a verb, not a server prefix.
        prefixes = frozenset(
            word for word, count in counts.items() if count >= 3 and count > len(tools) / 2 and word not in VERBS
        )
        by_word: dict[str, list[int]] = defaultdict(list)
        for position, found in enumerate(per_tool):
            for word in found:
                if len(word) >= RELATIVE_MIN_LETTERS and word not in VERBS and word not in prefixes:
                    by_word[word].append(position)
        relatives: dict[int, list[int]] = defaultdict(list)
        similar = _Similar(tools, compared)
        for members in by_word.values():
            if len(members) < 2:
                continue
            if similar.budget <= 0:  # a hostile list: searched as far as the budget reached
                break
            for one in members:
                found = relatives[one]
                # A few relatives are enough to say a tool has some and to name them in a message.
                for other in members:
                    if len(found) >= MAX_RELATIVES or similar.budget <= 0:
                        break
                    if other != one and other not in found and similar(one, other):
                        found.append(other)
        return cls(
            prefixes=prefixes,
            relatives={key: sorted(value) for key, value in relatives.items() if value},
            names={tool.index: tool.tool_name for tool in tools},
            tool_names=frozenset(tool.name for tool in tools if isinstance(tool.name, str) and tool.name),
        )

    def relatives_of(self, index: int) -> list[int]:
        return self.relatives.get(index, [])


SIMILAR_SHARE = 0.6
"""A relative's description shares at least this much of the distinct words of the longer one (MCP303's
measure)."""
RELATIVE_COMPARISONS = 300_000
"""Description comparisons a list's relatives are looked for with at most (a few tenths of a second): real lists
need a small part of it; a list of thousands of tools sharing name words is searched only that far (the same
bound MCP303 keeps on its pairs)."""


class _Similar:
    """Whether two tools' descriptions are similar by MCP303's measure: their distinct words (sentences repeated
    across the list left out, when the caller gives them so) share at least 60 % of the longer one's. Word sets
    are computed once per tool, when first asked for; a tool without a description is similar to none."""

    def __init__(self, tools: Sequence[ListedTool], compared: Callable[[], Sequence[str | None]] | None) -> None:
        self.tools = tools
        self.compared = compared
        self._texts: Sequence[str | None] | None = None
        self._sets: dict[int, frozenset[str]] = {}
        self.budget = RELATIVE_COMPARISONS

    def _words(self, position: int) -> frozenset[str]:
        found = self._sets.get(position)
        if found is None:
            if self._texts is None:
                given = self.compared() if self.compared is not None else None
                self._texts = given if given is not None else [tool.description_text for tool in self.tools]
            text = self._texts[position]
            found = self._sets[position] = frozenset(words(text)) if text else frozenset()
        return found

    def __call__(self, one: int, other: int) -> bool:
        if self.budget <= 0:
            return False
        self.budget -= 1
        first, second = self._words(one), self._words(other)
        if not first or not second:
            return False
        larger = max(len(first), len(second))
        if min(len(first), len(second)) < SIMILAR_SHARE * larger:
            return False  # the shorter cannot hold 60 % of the longer's words
        return len(first & second) >= SIMILAR_SHARE * larger
