"""The internal exception that carries a server's fault up to :func:`scanner.mcp.scan_server`.

Inside ``scanner.mcp`` a fault is raised as a :class:`ScanFailure` (always ``raise ... from exc`` when it
translates an httpx, anyio or OS error) so deep code can stop at once; ``scan_server`` turns it into a
:class:`scanner.models.ScanOutcome`. It never leaves this package.

    ScanFailure              outcome + one-line detail + extra
     └── HttpStatusFailure   a non-success HTTP status, with the (capped) body kept for era detection
          └── SessionExpired  404 to a request carrying our Mcp-Session-Id: initialize again
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scanner.models import Outcome


class ScanFailure(Exception):
    """One server's fault: how the scan ends, a line a person can read, and outcome-specific data.

    ``detail`` must never hold a request header value (they may be secrets); only what the server sent and
    what the client decided.
    """

    def __init__(self, outcome: Outcome, detail: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.outcome = outcome
        self.detail = detail
        self.extra: dict[str, Any] = dict(extra or {})


class HttpStatusFailure(ScanFailure):
    """An HTTP answer with a status the transport cannot use; the session decides whether to fall back."""

    def __init__(self, status: int, body: bytes, content_type: str, detail: str = "") -> None:
        super().__init__(Outcome.HTTP_ERROR, detail or f"HTTP {status}", {"status": status})
        self.status = status
        self.body = body
        self.content_type = content_type


class SessionExpired(HttpStatusFailure):
    """The server forgot the session (404 with ``Mcp-Session-Id``); the spec says start a new one."""

    def __init__(self, body: bytes, content_type: str) -> None:
        super().__init__(404, body, content_type, "HTTP 404: the server ended the session")
