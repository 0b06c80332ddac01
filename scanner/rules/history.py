"""Rules over time (MCP501-MCP503): registered for the catalogue only.

Their check needs two scans of the same server and lives with the scan comparison (``scanner.measure.history``), which
builds its findings with :func:`scanner.rules.make_finding` so slug, severity and hint come from this table.
"""

from __future__ import annotations

from scanner.models import Severity
from scanner.rules.registry import register_history

register_history(
    "MCP501",
    "tool-changed-silently",
    Severity.WARNING,
    hint="Bump the server's version whenever a tool's description or schema changes, and say what changed.",
    doc="""Warns when a tool's description or inputSchema changed between two scans while the server's reported
    version stayed the same (a "rug pull"). A user approved the tool as it was; a silent change can turn a
    harmless tool into one that steers the model, and nobody is told. Bad: version 1.2.0 before and after a
    new paragraph appears in a description. Good: the change ships as 1.2.1 with a changelog line.""",
)

register_history(
    "MCP502",
    "tool-removed",
    Severity.NOTE,
    hint="Deprecate a tool for a release before removing it, and say so in its description.",
    doc="""Notes a tool that was present in the previous successful scan and is gone now. Agents and prompts
    that call it by name start failing. Bad: `search_v1` disappears overnight. Good: it stays one release with
    "Deprecated: use search." in its description, then goes.""",
)

register_history(
    "MCP503",
    "instructions-changed-silently",
    Severity.WARNING,
    hint="Bump the server's version whenever its instructions change, and say what changed.",
    doc="""Warns when the server's `instructions` (from `initialize`, or the 2026 discovery result) changed
    between two successful scans while its reported version stayed the same. Many clients put the instructions
    into the system prompt on every turn, so they steer the model as much as any tool description; a silent
    change is a rug pull on the whole session. Bad: version 2.0.0 before and after a new paragraph appears in the
    instructions. Good: the change ships as 2.0.1. Scans stored before instructions were recorded are not
    compared.""",
)
