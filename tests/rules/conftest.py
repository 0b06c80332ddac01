"""Shared helpers for the rule tests: the real tokenizer and provider counts as the rule context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from scanner import providers
from scanner.measure import tokenizer
from scanner.models import PROVIDERS
from scanner.rules import RuleContext


def real_context(tools: Sequence[Any]) -> RuleContext:
    """What ``fathom check`` passes: o200k_base counts and the list's price with the dearest provider."""
    most = max(providers.list_tokens(provider, list(tools)).tokens for provider in PROVIDERS)
    return RuleContext(
        count_tokens=tokenizer.count,
        list_tokens_max=most,
        cost_text=providers.text_cost,
        cost_method=providers.text_cost_method(),
        server_key=FIXTURE_SERVER_KEY,
    )


FIXTURE_SERVER_KEY = "github"
"""The server key the rule fixtures are checked under (MCP809 builds the clients' names from it)."""


@pytest.fixture
def context_for() -> Callable[[Sequence[Any]], RuleContext]:
    return real_context


@pytest.fixture
def cheap_context() -> RuleContext:
    """For hostile-input tests: the real tokenizer, no list price (provider views are another module's tests)."""
    return RuleContext(count_tokens=tokenizer.count, list_tokens_max=0)
