"""Resolve one ``server.json`` (official registry format) into a :class:`ServerEntry`: what to connect to.

Choice of target, in order:

1. a remote of type ``streamable-http``, then one of type ``sse`` (``streamable`` / ``transport_type`` from
   before 2025-09-16 are read too). URL ``{variables}`` are filled from their defaults, or from the environment
   under ``FATHOM_VAR_<SERVER>_<VARIABLE>`` (:func:`scanner.registry.secrets.var_env_name`, never a
   ``FATHOM_SECRET_`` value); a variable with neither skips that remote, and a *secret* URL variable always
   does (the URL is stored, printed and queued, so it must not hold a secret).
   Headers: a value in the environment under the naming rule wins; otherwise a non-secret header is sent as
   given with its ``{placeholders}`` filled from defaults; a secret header, a required header without a value,
   or a value whose placeholders cannot be filled is left out, the entry is marked ``anonymous`` and the header
   names go to ``secret_header_names``.
2. otherwise a package (see :mod:`scanner.registry.packages`), which only runs with ``run_packages``.
3. otherwise the entry is skipped with the reason.

Secret values live only in ``entry.headers`` and ``entry.env``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scanner.models import ServerEntry, Transport
from scanner.registry import _json
from scanner.registry.address import url_problem
from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages
from scanner.registry.placeholders import PLACEHOLDER as _PLACEHOLDER
from scanner.registry.placeholders import fill
from scanner.registry.secrets import lookup, secret_env_name, var_env_name

MAX_NAME = 200
MAX_URL = 2048
_REMOTE_TYPES = {
    "streamable-http": Transport.STREAMABLE_HTTP,
    "streamable": Transport.STREAMABLE_HTTP,  # before 2025-09-16
    "sse": Transport.SSE,
}


def server_name(server: Mapping[str, Any]) -> str | None:
    """The server's registry name if it is a usable string."""
    return _json.text(server.get("name"), limit=MAX_NAME)


def server_version(server: Mapping[str, Any]) -> str | None:
    """``version``, or ``version_detail.version`` from the July 2025 format."""
    version = _json.text(server.get("version"), limit=255)
    if version is None:
        version = _json.text(_json.obj(server.get("version_detail")).get("version"), limit=255)
    return version


@dataclass
class _Remote:
    transport: Transport
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problem: str | None = None
    credentials: list[str] = field(default_factory=list)  # headers filled from FATHOM_SECRET_... (lanes)


def _resolve_remote(name: str, remote: dict[str, Any], environ: Mapping[str, str]) -> _Remote:
    kind = _json.text(_json.field(remote, "type", "transport_type")) or ""
    transport = _REMOTE_TYPES[kind]
    url = _json.text(remote.get("url"), limit=MAX_URL)
    result = _Remote(transport=transport)
    if url is None:
        result.problem = "remote has no usable url"
        return result
    variables = _json.obj(remote.get("variables"))
    supplied: dict[str, str] = {}
    for key in _PLACEHOLDER.findall(url):
        spec = _json.obj(variables.get(key))
        if _json.flag(spec, "isSecret", "is_secret"):
            result.problem = f"remote URL needs secret variable {{{key}}} (not supported: URLs are stored)"
            return result
        if lookup(environ, name, key) is not None:
            result.problem = (
                f"remote URL variable {{{key}}} is set as a secret ({secret_env_name(name, key)}); a URL is stored "
                f"and printed, so it is read from {var_env_name(name, key)} only"
            )
            return result
        from_env = environ.get(var_env_name(name, key)) or None
        if from_env is not None:
            supplied[key] = from_env
    filled, missing = fill(url, variables, supplied)
    if missing:
        result.problem = f"remote URL variable {{{missing[0]}}} has no default"
        return result
    problem = url_problem(filled)
    if problem is not None:
        result.problem = f"remote URL {filled[:200]!r}: {problem}"
        return result
    result.url = filled
    for header in _json.items(remote.get("headers"), limit=100):
        header_name = _json.text(header.get("name"), limit=256)
        if header_name is None or not _json.HEADER_NAME.match(header_name):
            continue
        known = {**variables, **{key: {"default": value} for key, value in supplied.items()}}
        value = _header_value(name, header_name, header, environ, {**known, **_json.obj(header.get("variables"))})
        if value is None:
            needed = _json.flag(header, "isSecret", "is_secret") or _json.flag(header, "isRequired", "is_required")
            if needed or _PLACEHOLDER.search(_json.text(header.get("value")) or ""):
                result.missing.append(header_name)
            continue
        result.headers[header_name] = value
        if lookup(environ, name, header_name) is not None:
            result.credentials.append(header_name)
    return result


def _header_value(
    server: str, header_name: str, header: dict[str, Any], environ: Mapping[str, str], variables: dict[str, Any]
) -> str | None:
    """The value to send for one declared header, or None when it has to be left out.

    Placeholders are filled from the header's own variables, then the remote's (a ``{region}`` header beside a
    ``{region}`` URL means the same thing).
    """
    value = lookup(environ, server, header_name)
    if value is None:
        if _json.flag(header, "isSecret", "is_secret"):
            return None
        template = _json.text(header.get("value")) or _json.text(header.get("default"))
        if template is None:
            return None
        value, missing = fill(template, variables)
        if missing:  # "Bearer {api_key}" with nothing to fill: a credential we do not have
            return None
    return value if _json.header_usable(header_name, value) else None


def resolve_server(server: Any, *, source: str, options: Options, index: int = 0) -> ServerEntry:
    """One server.json object → the entry to connect to (or to skip, with the reason)."""
    if not isinstance(server, dict):
        return ServerEntry(
            name=f"invalid-entry-{index}", transport=Transport.HTTP, source=source, skip="not a JSON object"
        )
    name = server_name(server)
    version = server_version(server)
    if name is None:
        return ServerEntry(
            name=f"invalid-entry-{index}",
            transport=Transport.HTTP,
            version=version,
            source=source,
            skip="server.json has no usable name",
        )
    remotes = [r for r in _json.items(server.get("remotes"), limit=100) if _json.field(r, "type", "transport_type")]
    problems: list[str] = []
    for wanted in (Transport.STREAMABLE_HTTP, Transport.SSE):
        for remote in remotes:
            if _REMOTE_TYPES.get(str(_json.field(remote, "type", "transport_type"))) is not wanted:
                continue
            resolved = _resolve_remote(name, remote, options.environ)
            if resolved.problem is not None:
                problems.append(resolved.problem)
                continue
            return ServerEntry(
                name=name,
                transport=resolved.transport,
                url=resolved.url,
                headers=resolved.headers,
                version=version,
                source=source,
                anonymous=bool(resolved.missing),
                secret_header_names=tuple(resolved.missing),
                credential_headers=tuple(resolved.credentials),
            )
    packages = _json.items(_json.field(server, "packages"), limit=100)
    if packages:
        return resolve_packages(name, version, packages, source=source, options=options, remote_problems=problems)
    reason = problems[0] if problems else "no remote and no package to run"
    return ServerEntry(name=name, transport=Transport.HTTP, version=version, source=source, skip=reason)
