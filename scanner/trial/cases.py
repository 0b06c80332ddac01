"""Cases for ``fathom try --cases``: prompts and the tool a model should call for each, from YAML or JSONL.

    # tent-cases.yaml (a list, or {"cases": [...]})
    - name: tent stock                      # optional; defaults to "case N"
      prompt: Is the two-person tent in stock?
      tool: search_catalog                  # the tool the model should call; null: it should call none
      arguments: {query: two-person tent}   # optional: these arguments must have exactly these values
      arguments_schema:                     # optional: the arguments must also satisfy this JSON Schema
        required: [query]

JSONL has one such object per line (files ending ``.jsonl`` or ``.ndjson``); anything else is read as YAML, which
also reads a JSON array. Unknown keys are an error, so a typo (``args:``) is not silently ignored.

YAML is read safely (no tags that build objects) and **without aliases**: ``*name`` is refused, so a few hundred
bytes of nested aliases (a "billion laughs" file) cannot expand to gigabytes. The file must be a regular file (or
``-``, standard input): a FIFO or a device is refused instead of waited on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from scanner import wire
from scanner.errors import InputError
from scanner.textsafe import clean
from scanner.trial.validate import check_schema

MAX_CASES_BYTES = 4 << 20
MAX_CASES = 1000

KEYS = frozenset({"name", "prompt", "tool", "arguments", "arguments_schema"})


@dataclass(frozen=True)
class Case:
    """One prompt and, unless ``expects_tool`` is False (a plain ``--prompt``), the tool it should lead to."""

    name: str
    prompt: str
    expects_tool: bool = False
    tool: str | None = None  # None with expects_tool: the model should call no tool
    arguments: dict[str, Any] | None = None
    arguments_schema: dict[str, Any] | None = None


def read_cases(path: str) -> bytes:
    """The bytes of a cases file (``-``: standard input), at most :data:`MAX_CASES_BYTES`; a FIFO, a device or a
    folder is refused without being opened (opening a FIFO waits for a writer)."""
    import os
    import stat

    from scanner.check.toolsets import read_source

    if path != "-":
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: not a regular file (a cases file is read whole, never waited on)")
    return read_source(path, MAX_CASES_BYTES)


def _no_alias_loader() -> Any:
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """SafeLoader that refuses every alias (``*name``) instead of expanding it."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not read in a cases file", event.start_mark
                )
            return super().compose_node(parent, index)

    return NoAliasLoader


def load_cases(path: str, data: bytes) -> list[Case]:
    """The cases in a file's bytes; raises :class:`InputError` naming the file, the case and what is wrong."""
    text = wire.decode_bytes(data)
    if PurePath(path).suffix.lower() in (".jsonl", ".ndjson"):
        items: list[Any] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(wire.loads(line))
            except (ValueError, RecursionError) as exc:
                raise InputError(f"{path}: line {number} is not JSON ({exc})") from None
    else:
        import yaml

        try:
            document = yaml.load(text, Loader=_no_alias_loader())  # a SafeLoader, aliases refused
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None)
            raise InputError(f"{path}: not valid YAML{where}" + (f" ({problem})" if problem else "")) from None
        if isinstance(document, dict) and "cases" in document:
            document = document["cases"]
        if not isinstance(document, list):
            raise InputError(f"{path}: want a list of cases (or {{cases: [...]}}), got {type(document).__name__}")
        items = [wire.sanitize(item) for item in document]
    if not items:
        raise InputError(f"{path}: no cases")
    if len(items) > MAX_CASES:
        raise InputError(f"{path}: {len(items)} cases; at most {MAX_CASES}")
    return [_case(path, index, item) for index, item in enumerate(items, start=1)]


def _case(path: str, index: int, item: Any) -> Case:
    where = f"{path}: case {index}"
    if not isinstance(item, dict):
        raise InputError(f"{where} is not a mapping")
    unknown = sorted(str(key) for key in item if key not in KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {clean(unknown[0])!r} (known: {', '.join(sorted(KEYS))})")
    prompt = item.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(f"{where}: 'prompt' must be non-empty text")
    if "tool" not in item:
        raise InputError(f"{where}: 'tool' is missing (the tool the model should call, or null for none)")
    tool = item["tool"]
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise InputError(f"{where}: 'tool' must be a tool name or null")
    name = item.get("name", f"case {index}")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: 'name' must be text")
    arguments = item.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise InputError(f"{where}: 'arguments' must be a mapping of argument names to expected values")
    schema = item.get("arguments_schema")
    if schema is not None:
        problem = check_schema(schema)
        if problem is not None:
            raise InputError(f"{where}: 'arguments_schema': {problem}")
    if tool is None and (arguments is not None or schema is not None):
        raise InputError(f"{where}: 'arguments' and 'arguments_schema' need a 'tool'")
    return Case(
        name=name,
        prompt=prompt,
        expects_tool=True,
        tool=tool,
        arguments=arguments,
        arguments_schema=schema,
    )
