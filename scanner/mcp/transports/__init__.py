"""The transports, and the one place that decides which to try for an entry, in order.

``Transport.HTTP`` (a URL whose transport is unknown) means: Streamable HTTP, then the deprecated HTTP+SSE
transport if the server rejects the handshake POST with 400, 404 or 405 (the spec's backwards-compatibility
rule). ``STREAMABLE_HTTP`` and ``SSE`` force one; ``STDIO`` spawns ``entry.command``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from scanner.mcp.limits import ClientLimits
from scanner.mcp.transports.base import ClientTransport
from scanner.mcp.transports.legacy_sse import LegacySseTransport
from scanner.mcp.transports.stdio import StdioTransport
from scanner.mcp.transports.streamable_http import StreamableHttpTransport
from scanner.models import ServerEntry, Transport

TransportFactory = Callable[[], ClientTransport]

__all__ = ["ClientTransport", "TransportFactory", "candidates", "stdio_env"]


def stdio_env(entry: ServerEntry, env: Mapping[str, str] | None) -> dict[str, str]:
    """The child's environment: exactly ``env`` if given, else this process's environment plus ``entry.env``."""
    if env is not None:
        return dict(env)
    merged = dict(os.environ)
    merged.update(entry.env)
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
