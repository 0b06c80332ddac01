"""Fixtures for the ``fathom try`` tests: a provider stub on loopback, and a clean provider environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.trial.stub import Stub

PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key, base URL or proxy leaks in from the machine: each test sets what it means."""
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
