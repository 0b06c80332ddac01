"""Anthropic Messages API: the ``tools`` it receives, and what the list costs per turn, for both of Claude's
tokenizer generations.

The request carries ``{"name", "description", "input_schema"}`` per tool. The model does not read that JSON
as sent: the definitions reach it inside the tool-use system prompt as a ``<functions>`` block holding one
``<function>{...}</function>`` line per tool, the JSON being ``{"description", "name", "parameters"}`` with
sorted keys and Python's default ``", "`` / ``": "`` separators (a system prompt leaked in 2025).

Claude has two tokenizer generations (docs/tokens.md names the models of each): the one of Claude Opus 4.7 and
later (:data:`CURRENT`, key ``anthropic``, the headline number) and the earlier one of Claude 3 through Opus 4.6
(:data:`EARLIER`, key ``anthropic-v3``), still used by Sonnet 4.x, Opus 4.5/4.6 and Haiku 4.5. Both are private.
Where the ``ctok`` package (an offline reconstruction of both, Python 3.12+, the ``claude`` extra) is importable,
the block is counted with it; otherwise the count is the o200k_base count of the block times a factor calibrated
with ``ctok`` on real tool lists, each factor's measured error stated in docs/tokens.md and in the method. Either
way the fixed tool-use system prompt Anthropic documents for tool_choice auto/none (346 tokens) is added.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scanner.measure import tokenizer
from scanner.models import TokenCount
from scanner.providers.base import EMPTY_OBJECT_SCHEMA, Measurement, Provider, ToolParts, scaled

SYSTEM_PROMPT_TOKENS = 346
"""The tool-use system prompt added when tools are present and tool_choice is auto or none (313 for any/tool)."""

OPEN = "<functions>\n"
CLOSE = "</functions>"
# ``json.dumps(value, sort_keys=True, ensure_ascii=False)``, built once (a line per tool of every new list).
_SORTED_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class Generation:
    """One Claude tokenizer generation: its storage key, the models using it, and how it is counted.

    ``factor`` is Claude tokens per o200k_base token on the ``<functions>`` block, measured with ``ctok``;
    ``error`` the largest relative error of that factor seen on the calibration lists (docs/tokens.md).
    """

    key: str
    models: str
    ctok_version: str
    factor: float
    error: str


CURRENT = Generation("anthropic", "Claude Opus 4.7+", "4.7", 1.49, "±8 %")
EARLIER = Generation("anthropic-v3", "Claude 3 to Opus 4.6", "3.0", 1.10, "±4 %")


@functools.cache
def _ctok() -> Any | None:
    """The ``ctok`` module when it is installed (the ``claude`` extra, Python 3.12+), else None."""
    if importlib.util.find_spec("ctok") is None:
        return None
    return importlib.import_module("ctok")


def ctok_available() -> bool:
    return _ctok() is not None


@functools.cache
def _ctok_counter(version: str) -> Callable[[str], int]:
    """Claude tokens of a text under ``ctok`` (its single-message frame subtracted)."""
    module = _ctok()
    assert module is not None
    frame = module.token_count("", version)
    return lambda text: module.token_count(text, version) - frame


@functools.cache
def _frame_tokens() -> int:
    """o200k_base tokens of the block's opening and closing tags (constant text: counted once per process)."""
    return tokenizer.count(OPEN) + tokenizer.count(CLOSE)


class Anthropic(Provider):
    def __init__(self, generation: Generation = CURRENT) -> None:
        self.generation = generation
        self.name = generation.key

    @property
    def method(self) -> str:
        generation = self.generation
        if ctok_available():
            return (
                f"ctok {generation.ctok_version} (<functions> block, {generation.models} tokenizer)"
                f"+{SYSTEM_PROMPT_TOKENS} system prompt"
            )
        return (
            f"o200k_base(<functions> block)x{generation.factor:.2f} ({generation.models} tokenizer, calibrated "
            f"with ctok, {generation.error})+{SYSTEM_PROMPT_TOKENS} system prompt"
        )

    def declaration(self, parts: ToolParts) -> dict[str, Any]:
        out: dict[str, Any] = {"name": parts.name}
        if parts.description is not None:
            out["description"] = parts.description
        out["input_schema"] = parts.schema if parts.schema is not None else dict(EMPTY_OBJECT_SCHEMA)
        return out

    @staticmethod
    def function_line(declaration: dict[str, Any]) -> str:
        """One ``<function>{json}</function>`` line as the model reads it (newline included)."""
        model_side: dict[str, Any] = {"name": declaration["name"], "parameters": declaration["input_schema"]}
        if "description" in declaration:
            model_side["description"] = declaration["description"]
        return f"<function>{_SORTED_JSON.encode(model_side)}</function>\n"

    def text_tokens(self, text: str) -> int:
        """What a piece of tool text costs with this generation (``ctok``, or o200k_base times the factor)."""
        if ctok_available():
            return _ctok_counter(self.generation.ctok_version)(text)
        return scaled(tokenizer.count(text), self.generation.factor)

    def counting(self, tools: Sequence[ToolParts | None]) -> tokenizer.Counting[Measurement]:
        measured = yield from generations_counting(tools, (self.generation,))
        return measured[self.generation.key]

    def block(self, tools: Sequence[Any]) -> str:
        """The whole ``<functions>`` block the model reads (for tests and for showing a user)."""
        lines = [self.function_line(declaration) for declaration in self.view(tools)]
        return OPEN + "".join(lines) + CLOSE if lines else ""


def generations_counting(
    tools: Sequence[ToolParts | None], generations: Sequence[Generation]
) -> tokenizer.Counting[dict[str, Measurement]]:
    """The list measured for several generations at once, as a counting job
    (:func:`scanner.measure.tokenizer.count_together`): the ``<functions>`` lines are built and counted in
    o200k_base once, then scaled per generation (or each counted with ``ctok`` when it is installed)."""
    use_ctok = ctok_available()
    render = Anthropic(CURRENT)
    lines: list[str | None] = [
        None if parts is None else render.function_line(render.declaration(parts)) for parts in tools
    ]
    sent = [line for line in lines if line is not None]
    raw: list[int | None] = []
    if not use_ctok:
        numbers = iter((yield sent))
        raw = [None if line is None else next(numbers) for line in lines]
    out: dict[str, Measurement] = {}
    for generation in generations:
        provider = Anthropic(generation)
        if not sent:
            out[generation.key] = Measurement(TokenCount(generation.key, 0, provider.method), (0,) * len(lines))
            continue
        if use_ctok:
            count = _ctok_counter(generation.ctok_version)
            per_tool = tuple(0 if line is None else count(line) for line in lines)
            block = count(OPEN + "".join(sent) + CLOSE)
        else:
            per_tool = tuple(0 if n is None else scaled(n, generation.factor) for n in raw)
            # Every line ends in ">\n" and the next starts with "<": a pre-token boundary in o200k_base, so the
            # block's count is exactly the sum of its lines' counts (tests check this).
            block = scaled(sum(n for n in raw if n is not None) + _frame_tokens(), generation.factor)
        total = TokenCount(generation.key, block + SYSTEM_PROMPT_TOKENS, provider.method)
        out[generation.key] = Measurement(total, per_tool)
    return out
