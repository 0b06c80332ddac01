"""The caps every scan runs under: one deadline, byte and count limits on everything a server sends.

A server is untrusted: it may never answer, answer one byte a second, send a gigabyte, or page forever. Every
limit here turns one of those into an outcome instead of a hung or exhausted scanner.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClientLimits:
    """Limits for one server's scan.

    ``timeout`` is the whole scan's deadline (spawn or connect, handshake, every page, shutdown excluded); a
    slow drip of bytes cannot extend it. ``connect_timeout`` bounds opening a TCP connection and the era probe.
    """

    timeout: float = 30.0
    connect_timeout: float = 10.0
    max_answer_bytes: int = 16 * 1024 * 1024
    max_pages: int = 100
    max_tools: int = 5_000
    max_line_bytes: int = 16 * 1024 * 1024
    max_stderr_bytes: int = 64 * 1024
    max_redirects: int = 5
    shutdown_grace: float = 1.0
    #: Requests of the server's own (``ping``, ``roots/list``...) answered in one scan; one more is its
    #: protocol_error. Each reply is bounded work, sent one at a time: a flood cannot pile up replies.
    max_server_requests: int = 100

    @property
    def probe_timeout(self) -> float:
        """How long the 2026 ``server/discover`` probe may take before the server is taken for legacy."""
        return min(self.connect_timeout, self.timeout / 3)
