"""The transports, and the one place that decides which to try for an entry, in order.

``Transport.HTTP`` (a URL whose transport is unknown) means: Streamable HTTP, then the deprecated HTTP+SSE
transport if the server rejects the handshake POST with 400, 404 or 405 (the spec's backwards-compatibility
rule). ``STREAMABLE_HTTP`` and ``SSE`` force one; ``STDIO`` spawns ``entry.command``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from scanner.mcp.limits import ClientLimits
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.legacy_sse import LegacySseTransport
from scanner.mcp.transports.stdio import StdioTransport
from scanner.mcp.transports.streamable_http import StreamableHttpTransport
from scanner.models import ServerEntry, Transport

TransportFactory = Callable[[], ClientTransport]

__all__ = [
    "DETERMINISM_ENV",
    "PASSTHROUGH_ENV",
    "ClientTransport",
    "TransportFactory",
    "candidates",
    "passthrough_env",
    "stdio_env",
]


# Python salts str hashes per process unless this is set. A server that builds a schema from a set (mcp-atlassian
# 0.23 joins a set of field names into a parameter's default) then lists different bytes at every start, so its
# toolset hash churns and the history flags a silent change on each scan. A fixed seed makes it repeatable; the
# scanner never calls a tool, so the salt's protection (hash flooding by untrusted input) is not needed here.
DETERMINISM_ENV: Mapping[str, str] = {"PYTHONHASHSEED": "0"}


# What a stdio child may take from Fathom's own environment, and nothing else: the list the official MCP SDKs use
# for a client's default (``get_default_environment``), plus the locale. Never a token, a cloud key or a
# FATHOM_SECRET_* value: a command gets those only when its entry declares them (``env`` in a config file).
PASSTHROUGH_ENV: tuple[str, ...] = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE")
)


def passthrough_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`PASSTHROUGH_ENV` variables set in ``environ`` (default: this process's environment).

    A value starting ``()`` is a bash exported function (Shellshock's vector) and is left out, as the SDKs do.
    """
    source = os.environ if environ is None else environ
    return {name: value for name in PASSTHROUGH_ENV if (value := source.get(name)) and not value.startswith("()")}


def stdio_env(entry: ServerEntry, env: Mapping[str, str] | None) -> dict[str, str]:
    """The child's environment: ``env`` if given (a package's scrubbed environment with its own HOME), else
    :func:`passthrough_env` plus ``entry.env`` (what the entry declares wins); either way with
    :data:`DETERMINISM_ENV` for the variables it does not set itself. Never this process's whole environment.
    The stdio transport adds one more, ``FATHOM_SCAN_MARK`` (a random value, no secret), to find descendants that
    escape the process group when the server is stopped."""
    merged = dict(env) if env is not None else {**passthrough_env(), **entry.env}
    for key, value in DETERMINISM_ENV.items():
        merged.setdefault(key, value)
    return merged


def candidates(
    entry: ServerEntry, limits: ClientLimits, headers: Mapping[str, str], env: Mapping[str, str] | None
) -> list[TransportFactory]:
    """The transports to try for ``entry``, in order; the next is tried only when the first is told to fall back."""
    url = entry.url or ""
    match entry.transport:
        case Transport.STDIO:
            return [lambda: StdioTransport(entry.command, stdio_env(entry, env), limits)]
        case Transport.STREAMABLE_HTTP:
            return [lambda: StreamableHttpTransport(url, headers, limits)]
        case Transport.SSE:
            return [lambda: LegacySseTransport(url, headers, limits)]
        case Transport.HTTP:
            return [
                lambda: StreamableHttpTransport(url, headers, limits),
                lambda: LegacySseTransport(url, headers, limits),
            ]
    raise ValueError(f"unknown transport {entry.transport!r}")
