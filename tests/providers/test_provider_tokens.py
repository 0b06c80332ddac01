"""Token counts per provider: stamped with their method, consistent with the text they count, and fast.

``realistic-tools.json`` is the 13 tools ``@modelcontextprotocol/server-everything`` lists plus 12 tools written
in the shape of well-known servers (GitHub, filesystem, Slack, Postgres, Brave search, memory, fetch, calendar).
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from scanner.measure import tokenizer
from scanner.models import MEASURED_PROVIDERS, PROVIDERS, VIEW_NAMES, TokenCount
from scanner.providers import (
    PROVIDER_NAMES,
    PROVIDERS_BY_NAME,
    anthropic,
    gemini,
    list_tokens,
    measure,
    measure_all,
    provider_view,
    tool_tokens,
)
from scanner.providers.base import read_tool, scaled

REALISTIC: list[Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "realistic-tools.json").read_text(encoding="utf-8")
)


def test_provider_names_are_defined_once_in_the_models() -> None:
    assert PROVIDERS == ("anthropic", "openai", "gemini")
    assert MEASURED_PROVIDERS == ("anthropic", "anthropic-v3", "openai", "gemini")
    assert VIEW_NAMES == ("anthropic", "openai", "gemini", "gemini-openapi")
    assert PROVIDER_NAMES == ("anthropic", "anthropic-v3", "openai", "gemini", "gemini-openapi")


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_empty_list_costs_nothing(provider: str) -> None:
    count = list_tokens(provider, [])
    assert count.tokens == 0
    assert count.provider == provider
    assert count.method.startswith("o200k_base(")


def test_methods_name_how_each_number_is_made() -> None:
    methods = {provider: list_tokens(provider, REALISTIC).method for provider in PROVIDER_NAMES}
    assert methods == {
        "anthropic": "o200k_base(<functions> block)x1.49 (Claude Opus 4.7+ tokenizer, calibrated with ctok, ±8 %)"
        "+346 system prompt",
        "anthropic-v3": "o200k_base(<functions> block)x1.10 (Claude 3 to Opus 4.6 tokenizer, calibrated with ctok, "
        "±4 %)+346 system prompt",
        "openai": "o200k_base(harmony namespace render, openai-harmony 0.0.8)+15",
        "gemini": "o200k_base(functionDeclarations JSON, parametersJsonSchema as Gemini CLI and @google/genai "
        "send it)x1.04, serialisation undocumented by Google",
        "gemini-openapi": "o200k_base(functionDeclarations JSON, parameters converted to the OpenAPI subset)x1.04, "
        "serialisation undocumented by Google",
    }


def test_counts_are_positive_and_ordered_sensibly() -> None:
    counts = {provider: list_tokens(provider, REALISTIC).tokens for provider in PROVIDER_NAMES}
    # The harmony render is terser than JSON; Claude 4.7+ pays 1.4x on JSON plus a 346-token prompt.
    assert 0 < counts["openai"] < counts["gemini"] < counts["anthropic"]
    raw_json = tokenizer.count(json.dumps(provider_view("openai", REALISTIC)))
    assert counts["openai"] < 0.75 * raw_json  # counting the request JSON would overstate it
    one = {provider: list_tokens(provider, REALISTIC[:1]).tokens for provider in PROVIDER_NAMES}
    assert all(one[provider] < counts[provider] for provider in PROVIDER_NAMES)
    assert one["anthropic"] > anthropic.SYSTEM_PROMPT_TOKENS


def test_anthropic_count_is_the_functions_block() -> None:
    provider = PROVIDERS_BY_NAME["anthropic"]
    assert isinstance(provider, anthropic.Anthropic)
    block = provider.block(REALISTIC)
    assert block.startswith("<functions>\n<function>{")
    assert block.endswith("}</function>\n</functions>")
    assert block.count("<function>") == len(REALISTIC)
    for generation in (anthropic.CURRENT, anthropic.EARLIER):
        expected = scaled(tokenizer.count(block), generation.factor) + anthropic.SYSTEM_PROMPT_TOKENS
        assert list_tokens(generation.key, REALISTIC).tokens == expected
    # The current generation (Opus 4.7+) pays more for the same block: 1.49 / 1.10.
    ratio = (list_tokens("anthropic", REALISTIC).tokens - 346) / (list_tokens("anthropic-v3", REALISTIC).tokens - 346)
    assert 1.33 < ratio < 1.38


def test_anthropic_function_line_has_sorted_keys_and_default_separators() -> None:
    line = anthropic.Anthropic.function_line(
        {"name": "n", "description": "d", "input_schema": {"type": "object", "properties": {"b": {}, "a": {}}}}
    )
    assert line == (
        '<function>{"description": "d", "name": "n", "parameters": '
        '{"properties": {"a": {}, "b": {}}, "type": "object"}}</function>\n'
    )


@pytest.mark.parametrize("view", ["gemini", "gemini-openapi"])
def test_gemini_count_is_the_declarations_json(view: str) -> None:
    declarations = provider_view(view, REALISTIC)[0]["functionDeclarations"]
    expected = scaled(tokenizer.count(json.dumps(declarations, ensure_ascii=False)), gemini.FACTOR)
    assert list_tokens(view, REALISTIC).tokens == expected


def test_gemini_counts_the_defs_clients_send() -> None:
    """A schema's $defs reach Gemini with parametersJsonSchema (what clients send); the OpenAPI subset drops them."""
    defs = {f"D{i}": {"type": "object", "description": f"definition {i} " * 20} for i in range(10)}
    tool = {
        "name": "t",
        "description": "d",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "$defs": defs},
    }
    sent = list_tokens("gemini", [tool]).tokens
    subset = list_tokens("gemini-openapi", [tool]).tokens
    assert sent > subset + 300


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_measure_agrees_with_list_and_tool_tokens(provider: str) -> None:
    tools = [*REALISTIC[:5], 42, REALISTIC[5]]
    result = measure(provider, tools)
    assert result.total == list_tokens(provider, tools)
    assert result.per_tool == tuple(tool_tokens(provider, tool) for tool in tools)
    assert result.per_tool[5] == 0  # the number is not a tool
    assert all(cost > 0 for index, cost in enumerate(result.per_tool) if index != 5)


def test_measure_all_is_each_provider_alone_from_one_encoding(encodings: list[str]) -> None:
    """A list measured for every stored key at once (the scan's and check's path) gives each provider's own
    measurement, with every provider's texts counted in one encoding: one hand-over of the interpreter a list."""
    tools = [*REALISTIC[:5], 42, *REALISTIC[5:]]
    alone = {name: measure(name, tools) for name in MEASURED_PROVIDERS}
    encodings.clear()
    together = measure_all([read_tool(tool) for tool in tools])
    assert together == alone and list(together) == list(MEASURED_PROVIDERS)
    assert len(encodings) == 1


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_tool_costs_add_up_to_about_the_list_without_overhead(provider: str) -> None:
    result = measure(provider, REALISTIC)
    fixed = anthropic.SYSTEM_PROMPT_TOKENS if provider.startswith("anthropic") else 15 if provider == "openai" else 0
    own = sum(result.per_tool)
    # Only the list's wrapper text is unassigned; for OpenAI, ";\n\n//" merges across two functions, so the
    # separately counted pieces may even add up to a little more than the whole.
    assert abs(result.total.tokens - fixed - own) <= 30


def test_a_longer_description_costs_more_everywhere() -> None:
    tool = copy.deepcopy(REALISTIC[0])
    longer = copy.deepcopy(tool)
    longer["description"] += " It also repeats the message back in the response so the caller can check it."
    for provider in PROVIDER_NAMES:
        assert tool_tokens(provider, longer) > tool_tokens(provider, tool)


def _hundred_tools() -> list[Any]:
    tools = []
    for index in range(100):
        tool = copy.deepcopy(REALISTIC[index % len(REALISTIC)])
        tool["name"] = f"{tool['name']}_{index}"
        tools.append(tool)
    return tools


def test_hundred_tools_views_and_counts_are_fast() -> None:
    tools = _hundred_tools()
    tokenizer.encoding()  # the one-off load is not what is measured here
    start = time.process_time()
    results: dict[str, TokenCount] = {}
    for provider in PROVIDER_NAMES:
        provider_view(provider, tools)
        results[provider] = measure(provider, tools).total
    elapsed = time.process_time() - start
    assert all(count.tokens > 1000 for count in results.values())
    # Generous (CPU time still grows on a machine whose cores are shared); bench/bench_check.py measures speed.
    assert elapsed < 5.0, f"{elapsed:.3f}s CPU for 100 tools x 3 providers"
