"""``fathom check`` settings from a config file: ``[tool.fathom]`` in ``pyproject.toml`` or a ``fathom.toml``.

Found from the current directory upwards (in each directory ``fathom.toml`` first, then a ``pyproject.toml``
that has a ``[tool.fathom]`` table; the first one found is used, as ruff does), or named with ``--config``.
A ``fathom.toml`` holds the same keys at its top level. Keys (docs/ci.md has an example)::

    select = ["MCP1", "MCP2"]          # rule code prefixes to show (default: every rule)
    ignore = ["MCP303"]                # rule code prefixes to ignore
    format = "markdown"                # text | json | markdown | sarif
    fail-on = "warning"                # problem | warning | note
    fail-on-new = "problem"            # with a baseline: a new finding at this severity or worse fails
    fail-on-reject = ["claude-code", "openai-api"]   # clients that must load the whole list (scanner.measure.verdicts)
    server-key = "github"                # the server's name in a client's configuration (MCP809's built names)
    rules-url = "https://github.com/OWNER/fathom/blob/v0.1.0/docs/rules.md"   # SARIF helpUri base (else none)
    min-score = 85
    max-tokens = 8000                  # the most expensive provider; or a table {openai = 5000, codex = 300}
    max-increase = "10%"               # or a number of tokens; needs a baseline
    baseline = "fathom-baseline.json"  # relative to the config file
    preview = true                     # also show preview rules' findings, marked (never scored or gated)
    [[tool.fathom.per-tool-ignores]]   # ([[per-tool-ignores]] in fathom.toml)
    tool = "search"
    rules = ["MCP103"]                 # prefixes; leave out to ignore every rule on that tool
    reason = "the name is the whole story for this one"

Command-line flags win over the file (a flag given replaces the file's value). An unknown key, a wrong type or
a per-tool ignore without a reason is an input error (exit 2): a typo must never silently switch a gate off. So is
a ``pyproject.toml`` on the way up that cannot be read or is not valid TOML, wherever its fault is (the message
names the file and the line): its ``[tool.fathom]`` could be there, unread.
Ignored findings are never dropped: ``check`` lists them as ignored, with the reason (:mod:`scanner.check`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scanner import safefile
from scanner.check.gates import (
    Gates,
    Increase,
    TokenLimit,
    parse_increase,
    parse_max_tokens,
    parse_score,
    parse_severity,
)
from scanner.check.result import ToolIgnore
from scanner.errors import InputError
from scanner.measure.verdicts import parse_clients
from scanner.models import Severity

FORMATS = ("text", "json", "markdown", "sarif")
_KEYS = {
    "select",
    "ignore",
    "format",
    "fail-on",
    "fail-on-new",
    "fail-on-reject",
    "min-score",
    "max-tokens",
    "max-increase",
    "baseline",
    "per-tool-ignores",
    "preview",
    "openai-strict",
    "server-key",
    "rules-url",
}


@dataclass(frozen=True)
class CheckConfig:
    """What a config file says (every field None or empty when it says nothing, or when there is no file)."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    tool_ignores: tuple[ToolIgnore, ...] = ()
    format: str | None = None
    fail_on: Severity | None = None
    min_score: float | None = None
    max_tokens: tuple[TokenLimit, ...] | None = None
    max_increase: Increase | None = None
    baseline: Path | None = None
    fail_on_new: Severity | None = None
    preview: bool | None = None
    fail_on_reject: tuple[str, ...] | None = None
    openai_strict: bool | None = None
    server_key: str | None = None
    rules_url: str | None = None


@dataclass(frozen=True)
class CheckSettings:
    """The settings a check runs with: flags over the file over the defaults."""

    select: tuple[str, ...]
    ignore: tuple[str, ...]
    tool_ignores: tuple[ToolIgnore, ...]
    format: str
    gates: Gates
    baseline: Path | None
    config: Path | None
    preview: bool = False
    openai_strict: bool = False  # show OpenAI's strict-mode view (a view: never scored or gated)
    server_key: str | None = None  # the name clients give the server (MCP809)
    rules_url: str | None = None  # where docs/rules.md is published: SARIF rules' helpUri (none without it)


def _has_table(path: Path) -> bool:
    """Whether ``path`` (a pyproject.toml) has ``[tool.fathom]``. A file that cannot be read or is not valid TOML
    is an input error naming the file and the line (exit 2), wherever the fault is: its ``[tool.fathom]`` may be
    there unread, and a check that ran without its gates would pass silently (issue 42). A file that is not one
    (a FIFO, /dev/zero), too large or nested too deeply is refused the same way (scanner/safefile.py)."""
    try:
        raw = safefile.read_regular(path, label=str(path), max_bytes=safefile.MAX_CONFIG_BYTES)
        data = safefile.parse_toml(raw, str(path))
    except InputError as exc:
        if isinstance(exc.__cause__, OSError | UnicodeDecodeError | tomllib.TOMLDecodeError):
            raise InputError(
                f"{exc}; its [tool.fathom] gates cannot be read, so the check stops rather than run without them"
            ) from exc.__cause__
        raise
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("fathom"), dict)


def find_config(start: Path) -> Path | None:
    """The config file for a check run in ``start``: the nearest ``fathom.toml`` or ``pyproject.toml`` with
    ``[tool.fathom]``, looking upwards."""
    for folder in (start, *start.parents):
        # lexists, not is_file: a FIFO, device or dangling link committed under one of these names is refused
        # loudly when read (scanner/safefile.py), never skipped for a config further up.
        candidate = folder / "fathom.toml"
        if os.path.lexists(candidate):
            return candidate
        candidate = folder / "pyproject.toml"
        if os.path.lexists(candidate) and _has_table(candidate):
            return candidate
    return None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputError(f"{where} must be a list of strings")
    return tuple(item.strip().upper() for item in value if item.strip())


def _max_tokens(value: Any, where: str) -> tuple[TokenLimit, ...]:
    if isinstance(value, bool):
        raise InputError(f"{where} must be a number of tokens or a table of provider (or client) = tokens")
    if isinstance(value, int):
        return (parse_max_tokens(value, where),)
    if isinstance(value, dict):
        return tuple(parse_max_tokens(f"{provider}={limit}", where) for provider, limit in value.items())
    raise InputError(f"{where} must be a number of tokens or a table of provider (or client) = tokens")


def _tool_ignores(value: Any, where: str) -> tuple[ToolIgnore, ...]:
    if not isinstance(value, list):
        raise InputError(f"{where} must be an array of tables ([[...per-tool-ignores]])")
    out = []
    for number, item in enumerate(value, 1):
        here = f"{where} #{number}"
        if not isinstance(item, dict):
            raise InputError(f"{here} must be a table with tool, rules and reason")
        unknown = set(item) - {"tool", "rules", "reason"}
        if unknown:
            raise InputError(f"{here}: unknown key {sorted(unknown)[0]!r} (tool, rules, reason)")
        tool, reason = item.get("tool"), item.get("reason")
        if not isinstance(tool, str) or not tool:
            raise InputError(f'{here} needs the tool\'s name (tool = "...")')
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"{here} ({tool}) needs a reason: say why the finding is fine")
        rules = _strings(item.get("rules", []), f"{here} rules")
        out.append(ToolIgnore(tool=tool, rules=rules, reason=reason.strip()))
    return tuple(out)


def parse_config(table: Mapping[str, Any], path: Path) -> CheckConfig:
    """A :class:`CheckConfig` from the ``[tool.fathom]`` table (or a fathom.toml's top level) of ``path``."""
    name = "[tool.fathom]" if path.name == "pyproject.toml" else ""
    where = f"{path}{' ' + name if name else ''}"
    unknown = set(table) - _KEYS
    if unknown:
        raise InputError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(_KEYS))})")
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"{where}: format {fmt!r} is not one of {', '.join(FORMATS)}")
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise InputError(f"{where}: baseline must be a file name")
    fail_on = table.get("fail-on")
    fail_on_new = table.get("fail-on-new")
    score = table.get("min-score")
    increase = table.get("max-increase")
    tokens = table.get("max-tokens")
    preview = table.get("preview")
    if preview is not None and not isinstance(preview, bool):
        raise InputError(f"{where}: preview must be true or false")
    openai_strict = table.get("openai-strict")
    if openai_strict is not None and not isinstance(openai_strict, bool):
        raise InputError(f"{where}: openai-strict must be true or false")
    reject = table.get("fail-on-reject")
    if reject is not None and not (
        isinstance(reject, str) or (isinstance(reject, list) and all(isinstance(item, str) for item in reject))
    ):
        raise InputError(f"{where}: fail-on-reject must be a client name or a list of them")
    key = table.get("server-key")
    if key is not None:
        key = parse_server_key(key, f"{where} server-key")
    rules_url = table.get("rules-url")
    if rules_url is not None:
        rules_url = parse_rules_url(rules_url, f"{where} rules-url")
    return CheckConfig(
        path=path,
        select=_strings(table["select"], f"{where} select") if "select" in table else None,
        ignore=_strings(table["ignore"], f"{where} ignore") if "ignore" in table else None,
        tool_ignores=_tool_ignores(table.get("per-tool-ignores", []), f"{where} per-tool-ignores"),
        format=fmt,
        fail_on=parse_severity(str(fail_on), f"{where} fail-on") if fail_on is not None else None,
        min_score=parse_score(score, f"{where} min-score") if score is not None else None,
        max_tokens=_max_tokens(tokens, f"{where} max-tokens") if tokens is not None else None,
        max_increase=parse_increase(increase, f"{where} max-increase") if increase is not None else None,
        baseline=(path.parent / baseline) if baseline else None,
        fail_on_new=parse_severity(str(fail_on_new), f"{where} fail-on-new") if fail_on_new is not None else None,
        preview=preview,
        fail_on_reject=parse_clients(reject, f"{where} fail-on-reject") if reject is not None else None,
        openai_strict=openai_strict,
        server_key=key,
        rules_url=rules_url,
    )


def parse_server_key(value: object, where: str = "--server-key") -> str:
    """The name a client gives the server in its configuration (MCP809 builds the clients' tool names from it):
    1 to 200 printable characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > 200 or not value.isprintable():
        raise InputError(f"{where} must be the server's name in a client's configuration (1-200 printable characters)")
    return value.strip()


# Characters a URI may carry unescaped (RFC 3986), less those that would end a Markdown link: "(" and ")".
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?\[\]@!$&'*+,;=%-]+")


def parse_rules_url(value: object, where: str = "--rules-url") -> str:
    """The absolute http(s) address where ``docs/rules.md`` is published (SARIF 2.1.0's ``helpUri`` must be an
    absolute URI; a rule's fragment is added to it), without a fragment of its own."""
    if isinstance(value, str):
        parts = urlsplit(value.strip())
        if (
            parts.scheme in ("http", "https")
            and parts.netloc
            and not parts.fragment
            and "#" not in value
            and len(value) <= 500
            and _URL_CHARS.fullmatch(value.strip())
        ):
            return value.strip()
    raise InputError(
        f"{where} must be the absolute http(s) address of docs/rules.md, without a #fragment "
        "(e.g. https://github.com/OWNER/fathom/blob/v0.1.0/docs/rules.md)"
    )


def load_config(path: Path | None = None, *, start: Path | None = None) -> CheckConfig:
    """The config named by ``--config`` (must exist and hold our table), else the one found upwards from
    ``start`` (the current directory), else an empty one."""
    explicit = path is not None
    if path is None:
        path = find_config(start or Path.cwd())
        if path is None:
            return CheckConfig()
    data = safefile.load_toml(path, label=f"--config {path}" if explicit else str(path))
    if path.name == "pyproject.toml" or (explicit and "tool" in data and "fathom" in data.get("tool", {})):
        tool = data.get("tool")
        table = tool.get("fathom") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise InputError(f"{path} has no [tool.fathom] table")
        return parse_config(table, path)
    return parse_config(data, path)


def _inside_tree(path: Path, config: Path | None) -> None:
    """A file a config names is read only inside the working tree or the config's own folder (a pull request's
    config is hostile input: it must not point the check at a runner's files)."""
    tree = safefile.working_tree()
    real = Path(os.path.realpath(path))
    home = Path(os.path.realpath(config.parent)) if config is not None else tree
    if not safefile.inside(real, tree) and not safefile.inside(real, home):
        raise InputError(
            f"{config}: baseline {path} is outside the working tree {tree}; a config file names files only inside it"
        )


def settings(
    config: CheckConfig,
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    fmt: str | None = None,
    fail_on: str | None = None,
    strict: bool = False,
    min_score: float | None = None,
    max_tokens: Sequence[str] | None = None,
    max_increase: str | None = None,
    baseline: Path | None = None,
    fail_on_new: str | None = None,
    preview: bool = False,
    fail_on_reject: str | None = None,
    openai_strict: bool = False,
    server_key: str | None = None,
    rules_url: str | None = None,
) -> CheckSettings:
    """Flags (None or empty when not given) over ``config`` over the defaults. ``--strict`` is
    ``--fail-on problem``; with both flags, ``--fail-on`` wins."""
    if fail_on is not None:
        level: Severity | None = parse_severity(fail_on)
    elif strict:
        level = Severity.PROBLEM
    else:
        level = config.fail_on
    limits = tuple(parse_max_tokens(item) for item in max_tokens) if max_tokens else config.max_tokens or ()
    gates = Gates(
        fail_on=level,
        min_score=parse_score(min_score) if min_score is not None else config.min_score,
        max_tokens=limits,
        max_increase=parse_increase(max_increase) if max_increase is not None else config.max_increase,
        fail_on_new=parse_severity(fail_on_new, "--fail-on-new") if fail_on_new is not None else config.fail_on_new,
        fail_on_reject=parse_clients(fail_on_reject) if fail_on_reject is not None else config.fail_on_reject or (),
    )
    if baseline is None and config.baseline is not None:
        _inside_tree(config.baseline, config.path)
    return CheckSettings(
        select=tuple(select) if select else (config.select or ()),
        ignore=tuple(ignore) if ignore else (config.ignore or ()),
        tool_ignores=config.tool_ignores,
        format=fmt or config.format or "text",
        gates=gates,
        baseline=baseline if baseline is not None else config.baseline,
        config=config.path,
        preview=preview or bool(config.preview),
        openai_strict=openai_strict or bool(config.openai_strict),
        server_key=parse_server_key(server_key) if server_key is not None else config.server_key,
        rules_url=parse_rules_url(rules_url) if rules_url is not None else config.rules_url,
    )
