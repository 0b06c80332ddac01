"""``server.json`` checked offline against the shipped copies of its published JSON Schemas.

The registry publishes one schema per format date at ``https://static.modelcontextprotocol.io/schemas/<date>/
server.schema.json``; Fathom ships every one of them (``scanner/registry/schemas/server-<date>.schema.json``,
copied unchanged from github.com/modelcontextprotocol/static, commit a9ba437, 2025-12-12), so no scan fetches a
schema. An entry is checked against the schema its ``$schema`` names (a ``#fragment`` ignored), or the newest
shipped one when it names none Fathom has. Formats (``uri``) are not asserted, as the schemas' own draft-07 does
by default. Validation uses ``jsonschema-rs`` (a Rust draft-07 validator; its messages quote with ``"``).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

import jsonschema_rs

_DATE = re.compile(r"/schemas/(\d{4}-\d{2}-\d{2})/server\.schema\.json")
MAX_ERRORS = 50
MAX_MESSAGE = 300


@functools.cache
def shipped_dates() -> tuple[str, ...]:
    """The format dates of the shipped schemas, oldest first."""
    folder = resources.files("scanner.registry").joinpath("schemas")
    names = [item.name for item in folder.iterdir() if item.name.startswith("server-")]
    return tuple(sorted(name.removeprefix("server-").removesuffix(".schema.json") for name in names))


def schema_date(named: Any) -> tuple[str, bool]:
    """The shipped schema date to check against for a ``$schema`` value, and whether it was the one named."""
    dates = shipped_dates()
    match = _DATE.search(named) if isinstance(named, str) else None
    if match is not None and match.group(1) in dates:
        return match.group(1), True
    return dates[-1], False


@functools.cache
def _validator(date: str) -> Any:
    path = resources.files("scanner.registry").joinpath("schemas", f"server-{date}.schema.json")
    # jsonschema-rs (draft-07, like the schemas): ~50x faster than python-jsonschema on the real registry (0.05 ms
    # an entry instead of 2.5 ms), so 25 000 entries validate in about a second instead of a minute or more.
    schema = json.loads(path.read_text(encoding="utf-8"))
    return jsonschema_rs.Draft7Validator(schema, validate_formats=False, offline=True)


def _pointer(path: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def schema_errors(server: Any) -> tuple[str, bool, list[dict[str, str]]]:
    """(the schema date used, whether ``$schema`` named it, every error as ``{"path", "message"}``).

    ``path`` is a JSON Pointer into the entry (``/packages/0/version``); at most :data:`MAX_ERRORS` errors, each
    message capped at :data:`MAX_MESSAGE` characters, in the order of their paths.
    """
    named = server.get("$schema") if isinstance(server, dict) else None
    date, known = schema_date(named)
    try:
        found = sorted(
            ((_pointer(error.instance_path), error.message) for error in _validator(date).iter_errors(server)),
            key=lambda item: item[0].split("/"),
        )
    except (ValueError, RecursionError):  # an entry nested deeper than the validator follows: one error says so
        return date, known, [{"path": "", "message": "nested too deeply to validate"}]
    errors = [{"path": path, "message": message[:MAX_MESSAGE]} for path, message in found[:MAX_ERRORS]]
    return date, known, errors
