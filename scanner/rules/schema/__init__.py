"""Rules on a tool's ``inputSchema`` and ``outputSchema`` (MCP201-MCP218): what a model needs to fill the
arguments right, and what a client validates results against.

Every rule reads the one iterative walk of :class:`~scanner.rules.tools.ToolInfo` and reports one finding per
tool, the parameters involved in ``details["parameters"]`` (the paths where a model meets them: dotted, ``[]``
for array items) and a JSON Pointer to the first place it applies (where the schema is written, inside
``$defs`` when it came from a definition; ``details["definitions"]`` then maps the path to the ``$ref``). Local
``$ref``s are followed once per path; where a level's keys may come from a reference that cannot be resolved
(remote, an anchor, missing), MCP204 and MCP206 stay silent rather than guess.

One module per family: :mod:`.shape` (MCP201-MCP206), :mod:`.descriptions` (MCP207, MCP218), :mod:`.portability`
(MCP208-MCP209), :mod:`.size` (MCP210-MCP213), :mod:`.validity` (MCP214-MCP217); :mod:`.common` holds what they
share. Importing this package registers them all (the catalogue lists rules in code order, whatever the order
of import).
"""

from __future__ import annotations

from scanner.rules.schema import (  # noqa: F401  (registration)
    descriptions,
    portability,
    shape,
    size,
    validity,
)
