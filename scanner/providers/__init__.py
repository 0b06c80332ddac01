"""Provider views and token counts: what each provider's API receives for an MCP tool list, and its cost.

One table, :data:`PROVIDERS_BY_NAME`, chooses the implementation; nothing else branches on a provider's name.

    provider_view(provider, tools)  -> the request's ``tools`` JSON for that provider
    list_tokens(provider, tools)    -> TokenCount: tokens per turn for the list, stamped with its method
    tool_tokens(provider, tool)     -> one tool's own cost (no per-list overhead)
    measure(provider, tools)        -> both at once from one rendering (the total and every tool's cost)

Counting needs the offline o200k_base tokenizer and raises :class:`scanner.errors.TokenizerUnavailable` when
it is missing; views need no tokenizer. Hostile lists never raise: a tool that is not an object is left out of
a view and costs 0, names and descriptions of the wrong type are coerced to text, schemas are cut at
``SCHEMA_DEPTH_LIMIT``. How each estimate is made, and how far to trust it: ``docs/tokens.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scanner.errors import InputError
from scanner.models import PROVIDERS, TokenCount
from scanner.providers.anthropic import Anthropic
from scanner.providers.base import Measurement, Provider
from scanner.providers.gemini import Gemini
from scanner.providers.openai import OpenAI

PROVIDER_NAMES: tuple[str, ...] = ("anthropic", "openai", "gemini")

PROVIDERS_BY_NAME: dict[str, Provider] = {p.name: p for p in (Anthropic(), OpenAI(), Gemini())}

assert tuple(PROVIDERS_BY_NAME) == PROVIDER_NAMES == PROVIDERS

__all__ = [
    "PROVIDERS_BY_NAME",
    "PROVIDER_NAMES",
    "Measurement",
    "Provider",
    "get",
    "list_tokens",
    "measure",
    "provider_view",
    "tool_tokens",
]


def get(provider: str) -> Provider:
    """The implementation for a provider name; an unknown name is the caller's input error."""
    try:
        return PROVIDERS_BY_NAME[provider]
    except KeyError:
        raise InputError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDER_NAMES)}") from None


def provider_view(provider: str, tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Exactly the ``tools`` JSON that provider's API receives for this MCP tool list (best effort).

    Anthropic: ``[{name, description, input_schema}]``; OpenAI: ``[{"type": "function", "function": {name,
    description, parameters}}]``; Gemini: ``[{"functionDeclarations": [{name, description, parameters}]}]``
    with the schema converted to Gemini's OpenAPI subset. An empty (or all-invalid) list gives ``[]``.
    """
    return get(provider).view(tools)


def list_tokens(provider: str, tools: Sequence[Any]) -> TokenCount:
    """Tokens per turn the list costs with that provider, in its own format, with fixed per-request overhead.

    An empty list costs 0 (no tool prompt is added without tools). ``method`` names exactly how the number
    was made, e.g. ``o200k_base(<functions> block)x1.40+346 system prompt``.
    """
    return get(provider).measure(tools).total


def tool_tokens(provider: str, tool: Any) -> int:
    """One tool's own cost in that provider's format, without per-list overhead (0 for a non-object tool)."""
    return get(provider).tool_tokens(tool)


def measure(provider: str, tools: Sequence[Any]) -> Measurement:
    """The list's :class:`TokenCount` and every tool's own cost (aligned with ``tools``), rendering once.

    Equivalent to :func:`list_tokens` plus :func:`tool_tokens` for each tool, at about half the work.
    """
    return get(provider).measure(tools)
