"""What a turn cost, from a maintained price library (``genai-prices``), never from a hand-kept table.

``genai-prices`` works offline from the snapshot bundled in its wheel (Fathom never asks it to update from the
network). It matches a model name to a provider's list price (``claude-sonnet-4-5-20250929`` finds Claude Sonnet
4.5); for a bare model at an OpenAI-compatible base URL, the provider is found from the URL, and a server on the
user's own machine has no price. Anything it does not know is "price unknown", with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib.metadata import PackageNotFoundError, version

from scanner.providers.api import Usage
from scanner.trial.model import Target


@dataclass(frozen=True)
class Price:
    """A turn's price in US dollars, or None with why; ``method`` says where the number came from."""

    usd: Decimal | None
    method: str


@cache
def library() -> str:
    try:
        return f"genai-prices {version('genai-prices')}"
    except PackageNotFoundError:
        return "genai-prices (not installed)"


def price(target: Target, usage: Usage) -> Price:
    """The list price of one turn's reported tokens (no cache or batch discounts)."""
    if usage.input_tokens is None or usage.output_tokens is None:
        return Price(None, "price unknown: the provider did not report both input and output tokens")
    if target.compatible and target.loopback:
        return Price(None, "price unknown: a model on this machine")
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:
        return Price(None, "price unknown: genai-prices is not installed")
    counted = PriceUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    try:
        if target.compatible:
            found = calc_price(counted, model_ref=target.model, provider_api_url=target.base_url)
        else:
            found = calc_price(counted, model_ref=target.model, provider_id=target.api.price_provider_id)
    except LookupError:
        return Price(None, f"price unknown: {library()} has no price for {target.model!r}")
    return Price(
        Decimal(found.total_price),
        f"{library()} bundled snapshot: list price of {found.model.id} at {found.provider.name}",
    )
