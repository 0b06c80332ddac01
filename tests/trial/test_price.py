"""Turn prices come from genai-prices (offline snapshot), with the method; anything unknown says why."""

from __future__ import annotations

from decimal import Decimal

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from scanner.providers.api import Usage
from scanner.trial.model import resolve
from scanner.trial.price import price


def test_a_dated_model_name_finds_its_list_price() -> None:
    target = resolve("anthropic:claude-sonnet-4-5-20250929", environ={"ANTHROPIC_API_KEY": "k"})
    found = price(target, Usage(10_000, 500))
    expected = calc_price(
        PriceUsage(input_tokens=10_000, output_tokens=500), model_ref="claude-sonnet-4-5", provider_id="anthropic"
    )
    assert found.usd == Decimal(expected.total_price)
    assert "list price of claude-sonnet-4-5 at Anthropic" in found.method
    assert found.method.startswith("genai-prices ")


def test_a_compatible_server_is_priced_by_its_url() -> None:
    target = resolve("llama-3.3-70b-versatile", "https://api.groq.com/openai/v1", environ={})
    found = price(target, Usage(1000, 100))
    assert found.usd is not None and "Groq" in found.method


def test_unknowns_say_why() -> None:
    local = resolve("llama3.2:3b", "http://127.0.0.1:11434/v1", environ={})
    assert price(local, Usage(10, 1)).method == "price unknown: a model on this machine"
    remote = resolve("openai:not-a-model-xyz", environ={"OPENAI_API_KEY": "k"})
    assert price(remote, Usage(10, 1)).usd is None
    assert "has no price for 'not-a-model-xyz'" in price(remote, Usage(10, 1)).method
    assert price(remote, Usage(None, 1)).method.startswith("price unknown: the provider did not report")
