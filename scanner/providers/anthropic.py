"""Anthropic Messages API: the ``tools`` it receives, and what the list costs per turn.

The request carries ``{"name", "description", "input_schema"}`` per tool. The model does not read that JSON
as sent: the definitions reach it inside the tool-use system prompt as a ``<functions>`` block holding one
``<function>{...}</function>`` line per tool, the JSON being ``{"description", "name", "parameters"}`` with
sorted keys and Python's default ``", "`` / ``": "`` separators (a system prompt leaked in 2025).

Claude's tokenizer is private. The count is the o200k_base count of that block times a calibration factor, plus
the fixed tool-use system prompt Anthropic documents for tool_choice auto/none (346 tokens on current models).
The factor comes from an offline reconstruction of Claude's tokenizer (PyPI ``ctok``): ~1.07-1.09x o200k on
models up to 4.6, ~1.4x on 4.7 and later; the current models (4.7+) are the default. See ``docs/tokens.md``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from scanner import tokenizer
from scanner.models import TokenCount
from scanner.providers.base import EMPTY_OBJECT_SCHEMA, Measurement, Provider, ToolParts, scaled

FACTOR = 1.40
"""Claude 4.7+ tokens per o200k_base token on tool-definition text (1.07-1.09 for models up to 4.6)."""

SYSTEM_PROMPT_TOKENS = 346
"""The tool-use system prompt added when tools are present and tool_choice is auto or none (313 for any/tool)."""

OPEN = "<functions>\n"
CLOSE = "</functions>"

METHOD = f"o200k_base(<functions> block)x{FACTOR:.2f}+{SYSTEM_PROMPT_TOKENS} system prompt"
TOOL_METHOD = f"o200k_base(<function> line)x{FACTOR:.2f}"


@functools.cache
def _frame_tokens() -> int:
    """Tokens of the block's opening and closing tags (constant text: counted once per process)."""
    return tokenizer.count(OPEN) + tokenizer.count(CLOSE)


class Anthropic(Provider):
    name = "anthropic"

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
        return f"<function>{json.dumps(model_side, sort_keys=True, ensure_ascii=False)}</function>\n"

    def measure_parts(self, tools: Sequence[ToolParts | None]) -> Measurement:
        per_tool: list[int] = []
        raw_total = 0
        sent = 0
        for parts in tools:
            if parts is None:
                per_tool.append(0)
                continue
            # Every line ends in ">\n" and the next starts with "<": a pre-token boundary in o200k_base, so
            # the block's count is exactly the sum of its lines' counts (tests check this).
            line_tokens = tokenizer.count(self.function_line(self.declaration(parts)))
            raw_total += line_tokens
            per_tool.append(scaled(line_tokens, FACTOR))
            sent += 1
        if not sent:
            return Measurement(TokenCount(self.name, 0, METHOD), tuple(per_tool))
        raw_total += _frame_tokens()
        total = scaled(raw_total, FACTOR) + SYSTEM_PROMPT_TOKENS
        return Measurement(TokenCount(self.name, total, METHOD), tuple(per_tool))

    def block(self, tools: Sequence[Any]) -> str:
        """The whole ``<functions>`` block the model reads (for tests and for showing a user)."""
        lines = [self.function_line(declaration) for declaration in self.view(tools)]
        return OPEN + "".join(lines) + CLOSE if lines else ""
