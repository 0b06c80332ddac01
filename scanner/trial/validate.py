"""Check a model's arguments against a tool's ``inputSchema``, and against what a case expects.

The schema is the server's, bounded by :func:`scanner.providers.base.clip_json`; the draft is the one its
``$schema`` declares, 2020-12 when it declares none. Nothing in it is trusted:

* ``$ref`` never leaves the schema: jsonschema's default registry would fetch a remote ``$ref`` over the
  network (deprecated, but still on); here an unknown reference is "cannot be checked", never a request.
* ``pattern`` and ``patternProperties`` run on the ``regex`` module with a time limit, so a catastrophic
  pattern cannot hang the check: :data:`PATTERN_SECONDS` on one value, and :data:`PATTERN_TOTAL_SECONDS` for all
  the values of one answer's calls together (:func:`pattern_budget`; a check outside one gets its own), so a
  thousand values that each stay just under the first limit cannot add up to minutes.

Each problem is an :class:`ArgError`: the argument as a JSON Pointer into the arguments, what was expected,
and what came.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import regex
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable

from scanner.providers.base import clip_json

PATTERN_SECONDS = 0.5
"""Longest one ``pattern`` may take on one value before it counts as not checkable."""

PATTERN_TOTAL_SECONDS = 2.0
"""Longest all patterns may take on the values of one answer's calls (or of one check outside an answer)."""

# The deadline (time.monotonic()) of the pattern budget in force, or None outside one.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("fathom_pattern_deadline", default=None)

CONTAINERS_LIMIT = 256
"""Most objects or arrays in one array of a schema for which the schema itself is checked (see _checkable)."""

SHOWN_CHARS = 120
"""Longest expected/got text kept per error (the value itself stays in the JSON output's call)."""


@dataclass(frozen=True)
class ArgError:
    """One thing wrong with the arguments: ``pointer`` is a JSON Pointer ("" for the arguments as a whole)."""

    pointer: str
    expected: str
    got: str


class SchemaUnusable(Exception):
    """The tool's schema cannot be used to check arguments (invalid, unresolvable $ref, runaway pattern)."""


def _short(value: Any) -> str:
    text = value if isinstance(value, str) and value.startswith("<") else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def pointer(path: Any) -> str:
    """RFC 6901 JSON Pointer of a path of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


@contextlib.contextmanager
def pattern_budget(seconds: float = PATTERN_TOTAL_SECONDS) -> Iterator[None]:
    """Every pattern checked in the block shares ``seconds`` in all (an enclosing budget, if any, still holds)."""
    deadline = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _search(pattern: str, text: str) -> bool:
    deadline = _DEADLINE.get()
    left = PATTERN_SECONDS if deadline is None else min(PATTERN_SECONDS, deadline - time.monotonic())
    spent = f"the patterns took over {PATTERN_TOTAL_SECONDS:g} s in total on these arguments"
    if left <= 0:
        raise SchemaUnusable(spent)
    try:
        return regex.search(pattern, text, timeout=left) is not None
    except TimeoutError as exc:
        if left < PATTERN_SECONDS:
            raise SchemaUnusable(spent) from exc
        raise SchemaUnusable(f"the pattern {_short(pattern)} took over {PATTERN_SECONDS} s on one value") from exc
    except regex.error as exc:
        raise SchemaUnusable(f"the pattern {_short(pattern)} is not a valid regular expression ({exc})") from exc


def _pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and isinstance(patrn, str) and not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            if _search(patrn, key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


_SAFE_VALIDATORS: dict[type, type] = {}


def _checkable(value: Any) -> bool:
    """Can the meta-schema check run in reasonable time? Not when an array holds more than
    :data:`CONTAINERS_LIMIT` objects or arrays: jsonschema's ``uniqueItems`` test (draft 4-7 put it on ``enum``
    and ``required``) is quadratic for them (1,000 objects take seconds, 4,000 a minute). Such a schema is still
    used to check arguments; only the check of the schema itself is skipped."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            if sum(isinstance(element, dict | list) for element in item) > CONTAINERS_LIMIT:
                return False
            stack.extend(item)
    return True


def _validator(schema: dict[str, Any]) -> Validator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # an unknown $schema falls back to the default
        base = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
    safe = _SAFE_VALIDATORS.get(base)
    if safe is None:
        keywords: dict[str, Any] = {"pattern": _pattern}
        if "patternProperties" in base.VALIDATORS:
            keywords["patternProperties"] = _pattern_properties
        safe = jsonschema.validators.extend(base, keywords)
        _SAFE_VALIDATORS[base] = safe
    if _checkable(schema):
        try:
            base.check_schema(schema)
        except SchemaError as exc:
            raise SchemaUnusable(f"the tool's inputSchema is not a valid schema: {exc.message}") from exc
    # An empty registry: local refs resolve inside the schema, anything else is Unresolvable (never fetched).
    made: Validator = safe(schema, registry=Registry())
    return made


def _error(error: ValidationError) -> ArgError:
    keyword = str(error.validator)
    where = pointer(error.absolute_path)
    instance = error.instance
    if keyword == "required" and isinstance(error.validator_value, list) and isinstance(instance, dict):
        missing = [name for name in error.validator_value if isinstance(name, str) and name not in instance]
        if missing:
            return ArgError(f"{where}/{missing[0]}", "a required argument", "<missing>")
    if keyword in ("additionalProperties", "unevaluatedProperties") and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        properties = schema.get("properties")
        known = properties if isinstance(properties, dict) else {}
        extra = [name for name in instance if name not in known]
        if extra:
            return ArgError(f"{where}/{extra[0]}", "no such argument", _short(instance[extra[0]]))
    if keyword == "type":
        return ArgError(where, f"type {_short(error.validator_value)}", _short(instance))
    if keyword == "enum":
        return ArgError(where, f"one of {_short(error.validator_value)}", _short(instance))
    if keyword == "const":
        return ArgError(where, f"exactly {_short(error.validator_value)}", _short(instance))
    return ArgError(where, f"{keyword}: {_short(error.validator_value)}", _short(instance))


def check_arguments(schema: Any, arguments: Any) -> tuple[ArgError, ...]:
    """Every way ``arguments`` breaks ``schema`` (empty when valid), in document order.

    A missing or non-object schema means ``{"type": "object"}`` (what clients send for such a tool). Raises
    :class:`SchemaUnusable` when the schema itself cannot be used.
    """
    bounded = clip_json(schema) if isinstance(schema, dict) else {"type": "object"}
    validator = _validator(bounded)
    try:
        with pattern_budget():
            found = list(validator.iter_errors(arguments))
    except Unresolvable as exc:  # jsonschema re-raises it wrapped, as a subclass
        raise SchemaUnusable(f"the tool's inputSchema has a $ref that does not resolve inside it ({exc})") from exc
    except RecursionError as exc:
        raise SchemaUnusable("the tool's inputSchema recurses without end") from exc
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a malformed schema the meta-check skipped
        raise SchemaUnusable(f"the tool's inputSchema cannot be used to check arguments ({exc})") from exc
    found.sort(key=lambda error: ([str(part) for part in error.absolute_path], str(error.validator)))
    return tuple(_error(error) for error in found)


def check_expected(expected: dict[str, Any], arguments: Any) -> tuple[ArgError, ...]:
    """Arguments a case expects by value: each named argument must equal the expected JSON value."""
    if not isinstance(arguments, dict):
        return (ArgError("", "an object of arguments", _short(arguments)),)
    errors: list[ArgError] = []
    for name, value in expected.items():
        where = pointer([name])
        if name not in arguments:
            errors.append(ArgError(where, _short(value), "<missing>"))
        elif not _same(arguments[name], value):
            errors.append(ArgError(where, _short(value), _short(arguments[name])))
    return tuple(errors)


def _same(got: Any, want: Any) -> bool:
    """JSON equality: 1 and 1.0 are equal, True and 1 are not."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got is want
    if isinstance(got, int | float) and isinstance(want, int | float):
        return got == want
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[key], want[key]) for key in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want, strict=True))
    return type(got) is type(want) and got == want


def check_schema(schema: Any) -> str | None:
    """Why a case's ``arguments_schema`` cannot be used, or None when it can."""
    if not isinstance(schema, dict):
        return "arguments_schema must be a JSON Schema object"
    try:
        _validator(schema)
    except SchemaUnusable as exc:
        return str(exc)
    return None
