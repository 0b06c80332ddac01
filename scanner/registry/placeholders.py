"""``{name}`` placeholders of server.json templates (URLs, headers, package arguments) and their filling.

Apart from :mod:`scanner.registry.serverjson` and :mod:`scanner.registry.packages` because both use it: kept in
either, the two modules would import each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scanner.registry import _json

PLACEHOLDER = re.compile(r"\{([^{}]{1,100})\}")


def fill(template: str, variables: Any, values: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """Replace ``{name}`` from ``values`` or the variables' defaults; return the text and the names left open.

    A placeholder that names no declared variable stays as written (the server.json spec says so) but is still
    reported as open, so a caller can decide whether literal braces are acceptable where it puts the text.
    """
    declared = _json.obj(variables)
    supplied = values or {}
    missing: list[str] = []

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in supplied:
            return supplied[key]
        spec = _json.obj(declared.get(key))
        for candidate in (spec.get("value"), spec.get("default")):
            if isinstance(candidate, (str, int, float)) and not isinstance(candidate, bool):
                return str(candidate)
            if isinstance(candidate, bool):
                return "true" if candidate else "false"
        missing.append(key)
        return match.group(0)

    return PLACEHOLDER.sub(one, template), missing
