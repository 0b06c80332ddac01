"""How Fathom's error and usage lines begin (issue 46): after ``fathom:`` (or ``fathom COMMAND:``) the message starts
with a lower-case word, as git, rustc/cargo and LLVM write theirs; a word spelled with capitals anywhere in a
sentence keeps them (an acronym, a product: "HTTP 401", "PostgreSQL", "OpenAI", "MCP101", "Claude Desktop").
"""

from __future__ import annotations

import re

# Names spelled with a capital wherever they stand in a sentence.
PROPER = frozenset(
    {"Fathom", "Claude", "Gemini", "Python", "Chromium", "Codex", "Cursor", "Windsurf", "Node", "Anthropic", "Ctrl-C"}
)
_PREFIX = re.compile(r"fathom(?: [a-z][a-z-]*)*: ")


def first_word(message: str) -> str:
    return re.split(r"[\s:;,.(]", message.lstrip(), maxsplit=1)[0]


def starts_right(message: str) -> bool:
    """Whether ``message`` (without the ``fathom:`` prefix) starts as the convention says."""
    word = first_word(message)
    if not word or not word[0].isupper():
        return True
    # An acronym or a CamelCase name (a second capital or a digit), or a proper name.
    return bool(re.search(r"[A-Z0-9]", word[1:])) or word in PROPER


def message_of(line: str) -> str:
    """The message of a ``fathom: ...`` / ``fathom check: ...`` line."""
    match = _PREFIX.match(line)
    assert match is not None, f"not a fathom line: {line!r}"
    message = line[match.end() :]
    for label in ("error: ", "warning: ", "note: "):  # "fathom: note: ..." keeps its label
        message = message.removeprefix(label)
    return message
