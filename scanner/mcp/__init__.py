"""The raw MCP client: connect over stdio, Streamable HTTP or legacy HTTP+SSE, hand-shake in either era, and
list every page of tools, exactly as the server sent them.

No MCP SDK is used here: the checker must see what a server sent, including lists an SDK would reject. The one
entry point is :func:`scan_server`; it returns a :class:`scanner.models.ScanOutcome` and never raises for a
server's fault.
"""

from scanner.mcp.limits import ClientLimits
from scanner.mcp.profiles import DEFAULT_PROFILE, PROFILES
from scanner.mcp.session import scan_server

__all__ = ["DEFAULT_PROFILE", "PROFILES", "ClientLimits", "scan_server"]
