"""--model and --base-url to an endpoint: prefixes, bare names with colons, variables, loopback, keys."""

from __future__ import annotations

import pytest

from scanner.errors import InputError
from scanner.providers.api import MissingKey, redact_url, retry_after
from scanner.trial.model import is_loopback, resolve


def test_prefixed_models_use_the_provider_and_its_key() -> None:
    target = resolve("anthropic:claude-sonnet-4-5", environ={"ANTHROPIC_API_KEY": "k"})
    assert (target.api.provider, target.model, target.key_env) == (
        "anthropic",
        "claude-sonnet-4-5",
        "ANTHROPIC_API_KEY",
    )
    assert target.endpoint == "https://api.anthropic.com/v1/messages" and not target.loopback


def test_google_api_key_wins_over_gemini_api_key_as_in_the_sdk() -> None:
    target = resolve("gemini:gemini-2.5-flash", environ={"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"})
    assert (target.key_env, target.key) == ("GOOGLE_API_KEY", "b")


def test_bare_name_with_a_colon_is_an_openai_compatible_model() -> None:
    target = resolve("llama3.2:3b", "http://localhost:11434/v1/", environ={})
    assert target.compatible and target.model == "llama3.2:3b" and target.key is None
    assert target.endpoint == "http://localhost:11434/v1/chat/completions"
    assert target.loopback and target.spec == "llama3.2:3b"


def test_base_url_flag_beats_the_variable() -> None:
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://gateway.example/v1"}
    assert resolve("openai:gpt-4o", environ=env).endpoint == "https://gateway.example/v1/chat/completions"
    assert resolve("openai:gpt-4o", "http://127.0.0.1:8000", environ=env).endpoint == (
        "http://127.0.0.1:8000/v1/chat/completions"
    )


def test_missing_key_only_for_the_providers_own_endpoint() -> None:
    with pytest.raises(MissingKey, match="set OPENAI_API_KEY"):
        resolve("openai:gpt-4o", environ={})
    assert resolve("openai:gpt-4o", "http://127.0.0.1:9", environ={}).key is None


@pytest.mark.parametrize(
    ("model", "base", "words"),
    [
        ("gpt-4o", None, "name the provider"),
        ("anthropic:", None, "names no model"),
        ("x", "ftp://host", "want an http(s) URL"),
        ("x", "http://host/v1?key=1", "no query"),
    ],
)
def test_bad_model_or_base_url(model: str, base: str | None, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        resolve(model, base, environ={"ANTHROPIC_API_KEY": "k"})


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://localhost:1234", True),
        ("http://127.8.9.1", True),
        ("http://[::1]:8080/v1", True),
        ("https://api.openai.com", False),
        ("http://192.168.1.20:11434", False),
        ("http://localhost.evil.example", False),
    ],
)
def test_loopback(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_credentials_in_a_base_url_are_never_shown() -> None:
    assert redact_url("https://user:secret@gw.example:8443/v1/x") == "https://gw.example:8443/v1/x"


def test_retry_after_forms() -> None:
    import httpx

    assert retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}), now=1445412470.0) == 10.0
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({})) is None


def test_the_providers_own_host_with_a_path_is_not_a_custom_base() -> None:
    target = resolve("openai:o3-mini", environ={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://api.openai.com/v1"})
    assert not target.custom_base
    assert target.endpoint == "https://api.openai.com/v1/chat/completions"
    body = target.api.body(target.model, "hi", [], 64, custom_base=target.custom_base)
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body
    with pytest.raises(MissingKey):
        resolve("openai:o3-mini", environ={"OPENAI_BASE_URL": "https://api.openai.com/v1"})
