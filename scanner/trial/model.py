"""Which model, where, with which key: ``--model`` and ``--base-url`` resolved to one provider endpoint.

    anthropic:MODEL | openai:MODEL | gemini:MODEL      the provider's API (or a gateway: --base-url, its variable)
    MODEL --base-url URL                              an OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM, ...)

The table :data:`APIS` is the one place that picks a provider's wire code. The base URL is ``--base-url``, else
the provider's usual variable (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``), else the
provider's own.

The key: for ``PROVIDER:MODEL``, the provider's usual variable, required for the provider's own endpoint and sent
when set to a gateway (``--base-url`` or the provider's base-URL variable), as the provider's SDKs do. A bare
``MODEL`` at ``--base-url`` (an OpenAI-compatible server) gets **no key unless asked**: ``--key-env NAME`` names
the variable to send. ``--key-env`` always wins. A key is never sent over plain ``http`` to a host
that is not this machine (an InputError says so). Loopback means ``localhost`` or a loopback address literally;
a name under ``.localhost`` is not assumed to be this machine (it is resolved by the client like any name).
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
    """Is the URL's host this machine, literally (``localhost``, 127.0.0.0/8, ``::1``)? A name under
    ``.localhost`` is not taken for this machine without resolving it."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _base_url(raw: str, origin: str) -> str:
    url = raw.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise InputError(f"{origin}: not a usable URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{origin}: want an http(s) URL, got {redact_url(url)!r}")
    if parts.query or parts.fragment:
        raise InputError(f"{origin}: a base URL takes no query or fragment")
    return url


def resolve(
    model: str, base_url: str | None = None, environ: Mapping[str, str] | None = None, key_env: str | None = None
) -> Target:
    """The :class:`Target` for ``--model``, ``--base-url`` and ``--key-env``; raises InputError or MissingKey
    (exit 4). See the module docstring for which key goes where."""
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
    if key_env is not None:
        if not env.get(key_env):
            raise MissingKey(f"--key-env {key_env}: the variable is not set (nothing was sent)")
        chosen: str | None = key_env
    elif not compatible:
        # The provider's API, at its own endpoint or a gateway (--base-url or the provider's base-URL variable).
        chosen = next((variable for variable in api.key_envs if env.get(variable)), None)
        if chosen is None and not custom:
            names = " or ".join(api.key_envs)
            raise MissingKey(f"{api.label} needs an API key: set {names} (it is never printed or stored)")
    else:
        chosen = None  # an OpenAI-compatible server: no key unless --key-env names one
    if chosen is not None and urlsplit(base).scheme == "http" and not is_loopback(base):
        raise InputError(
            f"refusing to send the key in {chosen} over plain http to {urlsplit(base).hostname}: use https "
            "(a key goes over http only to this machine)"
        )
    return Target(
        api=api,
        model=name,
        base_url=base,
        custom_base=custom,
        compatible=compatible,
        key=env[chosen] if chosen else None,
        key_env=chosen,
    )
