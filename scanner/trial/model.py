"""Which model, where, with which key: ``--model`` and ``--base-url`` resolved to one provider endpoint.

    anthropic:MODEL | openai:MODEL | gemini:MODEL      the provider's API (or a gateway: --base-url, its variable)
    MODEL --base-url URL                              an OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM, ...)

The table :data:`APIS` is the one place that picks a provider's wire code. The base URL is ``--base-url``, else
the provider's usual variable (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``), else the
provider's own. The key is the provider's usual variable; it is required for the provider's own endpoint, and
sent when set (never required) for any other base URL, since local servers take none.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from scanner.errors import InputError
from scanner.providers.anthropic_api import AnthropicApi
from scanner.providers.api import MissingKey, ModelApi, redact_url
from scanner.providers.gemini_api import GeminiApi
from scanner.providers.openai_api import OpenAIApi, OpenAICompatibleApi

APIS: dict[str, ModelApi] = {api.provider: api for api in (AnthropicApi(), OpenAIApi(), GeminiApi())}


@dataclass(frozen=True)
class Target:
    """A resolved model: the wire code, the model name, where it is sent, and the key (never shown)."""

    api: ModelApi
    model: str
    base_url: str
    custom_base: bool  # not the provider's own host
    compatible: bool  # a bare model name at a base URL: an OpenAI-compatible server
    key: str | None
    key_env: str | None

    @property
    def endpoint(self) -> str:
        return self.api.endpoint(self.base_url, self.model)

    @property
    def shown_endpoint(self) -> str:
        return redact_url(self.endpoint)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.base_url)

    @property
    def label(self) -> str:
        """Who the prompt goes to, for people: the provider, or "the OpenAI-compatible server"."""
        return self.api.label

    @property
    def spec(self) -> str:
        return self.model if self.compatible else f"{self.api.provider}:{self.model}"


def is_loopback(url: str) -> bool:
    """Is the URL's host this machine (``localhost``, 127.0.0.0/8, ``::1``)?"""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _base_url(raw: str, origin: str) -> str:
    url = raw.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{origin}: want an http(s) URL, got {redact_url(url)!r}")
    if parts.query or parts.fragment:
        raise InputError(f"{origin}: a base URL takes no query or fragment")
    return url


def resolve(model: str, base_url: str | None = None, environ: Mapping[str, str] | None = None) -> Target:
    """The :class:`Target` for ``--model`` and ``--base-url``; raises InputError or MissingKey (exit 4)."""
    env = os.environ if environ is None else environ
    model = model.strip()
    prefix, sep, rest = model.partition(":")
    compatible = not (sep and prefix in APIS)
    if compatible:
        # A bare name ("llama3.2:3b" keeps its colon) is a model on an OpenAI-compatible server.
        if not base_url:
            raise InputError(
                f"--model {model!r}: name the provider (anthropic:MODEL, openai:MODEL, gemini:MODEL), or give "
                "--base-url for an OpenAI-compatible server"
            )
        api: ModelApi = OpenAICompatibleApi()
        name = model
    else:
        api = APIS[prefix]
        name = rest.strip()
    if not name:
        raise InputError(f"--model {model!r} names no model")
    if base_url:
        base = _base_url(base_url, "--base-url")
    elif env.get(api.base_url_env):
        base = _base_url(env[api.base_url_env], api.base_url_env)
    else:
        base = api.default_base_url
    # The provider's own API whatever the path ("https://api.openai.com/v1" is how OPENAI_BASE_URL is often set).
    custom = urlsplit(base).hostname != urlsplit(api.default_base_url).hostname
    key_env = next((variable for variable in api.key_envs if env.get(variable)), None)
    if key_env is None and not custom:
        names = " or ".join(api.key_envs)
        raise MissingKey(f"{api.label} needs an API key: set {names} (it is never printed or stored)")
    return Target(
        api=api,
        model=name,
        base_url=base,
        custom_base=custom,
        compatible=compatible,
        key=env[key_env] if key_env else None,
        key_env=key_env,
    )
