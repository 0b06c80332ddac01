"""Provider views and token counts: what each provider's API receives for an MCP tool list, and its cost.

One table, :data:`PROVIDERS_BY_NAME`, chooses the implementation; nothing else branches on a provider's name.
The names themselves are defined once, in :mod:`scanner.models` (``PROVIDER_TABLE``, ``VIEW_NAMES``).

    provider_view(provider, tools)  -> the request's ``tools`` JSON for that provider
    list_tokens(provider, tools)    -> TokenCount: tokens per turn for the list, stamped with its method
    tool_tokens(provider, tool)     -> one tool's own cost (no per-list overhead)
    measure(provider, tools)        -> both at once from one rendering (the total and every tool's cost)
    measure_all(parts)              -> every stored key's Measurement (both Claude generations from one rendering)
    text_cost(text)                 -> what a piece of tool text costs with the dearest provider (rules)

Keys: ``anthropic`` (Claude Opus 4.7+ tokenizer) and ``anthropic-v3`` (Claude 3 to Opus 4.6) share one view;
``gemini`` is ``parametersJsonSchema`` as current Google-SDK clients send it, ``gemini-openapi`` (a view, not
stored) the ``parameters`` OpenAPI subset.

Counting needs the offline o200k_base tokenizer and raises :class:`scanner.errors.TokenizerUnavailable` when
it is missing; views need no tokenizer. Hostile lists never raise: a tool that is not an object is left out of
a view and costs 0, names and descriptions of the wrong type are coerced to text, schemas are cut at
``SCHEMA_DEPTH_LIMIT``. How each estimate is made, and how far to trust it: ``docs/tokens.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scanner.errors import InputError
from scanner.measure import tokenizer
from scanner.models import MEASURED_PROVIDERS, VIEW_NAMES, TokenCount
from scanner.providers.anthropic import CURRENT, EARLIER, Anthropic, ctok_available, generations_counting
from scanner.providers.base import Measurement, Provider, ToolParts
from scanner.providers.gemini import Gemini, GeminiOpenAPI
from scanner.providers.openai import OpenAI

PROVIDERS_BY_NAME: dict[str, Provider] = {
    p.name: p for p in (Anthropic(CURRENT), Anthropic(EARLIER), OpenAI(), Gemini(), GeminiOpenAPI())
}

PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS_BY_NAME)
"""Every name :func:`get` accepts: the stored keys, then views that are not stored."""

assert set(MEASURED_PROVIDERS) <= set(PROVIDER_NAMES) and set(VIEW_NAMES) <= set(PROVIDER_NAMES)

__all__ = [
    "PROVIDERS_BY_NAME",
    "PROVIDER_NAMES",
    "Measurement",
    "Provider",
    "get",
    "list_tokens",
    "measure",
    "measure_all",
    "provider_view",
    "text_cost",
    "text_cost_method",
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
    description, parameters}}]``; Gemini: ``[{"functionDeclarations": [{name, description,
    parametersJsonSchema}]}]``; ``gemini-openapi``: the same with ``parameters``, the schema converted to
    Gemini's OpenAPI subset. An empty (or all-invalid) list gives ``[]``.
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


def measure_all(parts: Sequence[ToolParts | None]) -> dict[str, Measurement]:
    """Every stored key's :class:`Measurement` of tools already read with ``read_tool``, in display order.

    Both Claude generations come from one rendering of the ``<functions>`` block, and every provider's texts are
    counted in one encoding (one hand-over of the interpreter: :func:`scanner.measure.tokenizer.count_together`).
    """
    jobs = [generations_counting(parts, (CURRENT, EARLIER))]
    jobs += [
        _keyed(name, get(name).counting(parts)) for name in MEASURED_PROVIDERS if name not in (CURRENT.key, EARLIER.key)
    ]
    out: dict[str, Measurement] = {}
    for measured in tokenizer.count_together(jobs):
        out.update(measured)
    return {name: out[name] for name in MEASURED_PROVIDERS}


def _keyed(name: str, job: tokenizer.Counting[Measurement]) -> tokenizer.Counting[dict[str, Measurement]]:
    measured = yield from job
    return {name: measured}


def text_cost_method() -> str:
    """How :func:`text_cost` counts, for the details of the findings that use it."""
    how = f"ctok {CURRENT.ctok_version}" if ctok_available() else f"o200k_base x{CURRENT.factor:.2f}"
    return f"{CURRENT.key} ({CURRENT.models} tokenizer, {how})"


def text_cost(text: str) -> int:
    """What a piece of tool text (a sentence, a definition's JSON) costs per turn with the dearest provider:
    Claude's current tokenizer, which spends the most on the same text (docs/tokens.md)."""
    provider = PROVIDERS_BY_NAME[CURRENT.key]
    assert isinstance(provider, Anthropic)
    return provider.text_tokens(text)
