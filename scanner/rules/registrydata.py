"""Rules over registry data (MCP701-MCP705): what a registry publishes about a server, checked without connecting.

They fire on the entry itself (a ``server.json`` object), in ``fathom scan`` and ``--dry-run``, whether or not the
server answers. The rules are registered with the ``registry`` scope (the tool-list engine never runs them);
:func:`registry_findings` runs them over a whole registry at once, since MCP703 compares entries with each other.
Every finding has ``tool`` None and a JSON Pointer into the entry. They are ``preview`` until their precision on
labelled registry entries is published.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from scanner.models import Finding, Severity
from scanner.registry import _json
from scanner.rules.registry import RULES, Hit, make_finding, register

_PLACEHOLDER = re.compile(r"\{([^{}]{1,100})\}")
SHARED_NAMES_SHOWN = 10


@dataclass(frozen=True)
class RegistryContext:
    """What the registry rules need beyond one entry: every server name by remote URL key (MCP703)."""

    by_url: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _remotes(server: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    remotes = server.get("remotes")
    if not isinstance(remotes, list):
        return []
    return [(index, remote) for index, remote in enumerate(remotes[:100]) if isinstance(remote, dict)]


def _packages(server: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    packages = server.get("packages")
    if not isinstance(packages, list):
        return []
    return [(index, package) for index, package in enumerate(packages[:100]) if isinstance(package, dict)]


def url_key(url: str) -> str | None:
    """A remote URL as MCP703 compares it: scheme and host (with port) lowercased, then the path; no query."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path or '/'}"


def _unfilled(url: str, variables: Any) -> list[str]:
    declared = _json.obj(variables)
    missing = []
    for key in _PLACEHOLDER.findall(url):
        spec = _json.obj(declared.get(key))
        value = spec.get("value", spec.get("default"))
        if not (isinstance(value, str | int | float) and (not isinstance(value, str) or value)):
            missing.append(key)
    return missing


@register(
    "MCP701",
    "url-placeholder",
    Severity.PROBLEM,
    hint="Publish the URL a client should use, or declare the variable with a default.",
    doc="""Flags a remote whose URL still contains a `{variable}` that the entry gives no value or default for: a
    client cannot connect without guessing what to put there. Bad: `"url": "https://{tenant}.example.com/mcp"`
    with no `variables`. Good: the same URL with `"variables": {"tenant": {"default": "app"}}`, or the real URL.""",
    scope="registry",
    status="preview",
)
def url_placeholder(server: Mapping[str, Any], ctx: RegistryContext) -> Iterator[Hit]:
    for index, remote in _remotes(server):
        url = _json.text(remote.get("url"))
        if url is None:
            continue
        missing = _unfilled(url, remote.get("variables"))
        if missing:
            names = ", ".join("{" + name + "}" for name in missing[:10])
            yield Hit(
                f"Remote {index} URL {url[:200]!r} has {names} with no value or default.",
                pointer=f"/remotes/{index}/url",
                details={"url": url[:2048], "variables": missing[:10]},
            )


@register(
    "MCP702",
    "nothing-to-run",
    Severity.PROBLEM,
    hint="Publish a remote URL or a package a client can start.",
    doc="""Flags an entry that declares neither `remotes` nor `packages`, or only remotes without a URL and
    packages without an identifier: there is nothing a client can connect to or start. Bad: a `server.json` with a
    name, a description and a repository only. Good: a `remotes` entry with its URL, or a `packages` entry with its
    registry type and identifier.""",
    scope="registry",
    status="preview",
)
def nothing_to_run(server: Mapping[str, Any], ctx: RegistryContext) -> Iterator[Hit]:
    remotes = _remotes(server)
    packages = _packages(server)
    if any(_json.text(remote.get("url")) for _, remote in remotes):
        return
    if any(_json.text(package.get("identifier")) or _json.text(package.get("name")) for _, package in packages):
        return
    declared = "declares no remotes and no packages"
    if remotes or packages:
        declared = (
            f"declares {len(remotes)} remote(s) without a URL and {len(packages)} package(s) without an identifier"
        )
    yield Hit(f"The entry {declared}.", pointer="", details={"remotes": len(remotes), "packages": len(packages)})


@register(
    "MCP703",
    "url-shared",
    Severity.NOTE,
    hint="One server per endpoint: a client cannot tell which entry it is talking to.",
    doc="""Notes a remote URL (scheme, host and path; the host compared case-insensitively, the query ignored)
    that other servers in the same registry declare too: a client connecting to it cannot tell which entry it is
    talking to, and a census counts the endpoint twice. Details: how many others and their names (up to 10). Bad:
    `com.example/mail` and `com.example/calendar` both at `https://mcp.example.com/mcp`. Good: one entry for the
    endpoint, or one path per server.""",
    scope="registry",
    status="preview",
)
def url_shared(server: Mapping[str, Any], ctx: RegistryContext) -> Iterator[Hit]:
    name = _json.text(server.get("name"))
    seen: set[str] = set()
    for index, remote in _remotes(server):
        url = _json.text(remote.get("url"))
        key = url_key(url) if url else None
        if key is None or key in seen:
            continue
        seen.add(key)
        others = [other for other in ctx.by_url.get(key, ()) if other != name]
        if others:
            yield Hit(
                f"Remote {index} URL {key[:200]!r} is also declared by {len(others)} other server"
                + ("." if len(others) == 1 else "s."),
                pointer=f"/remotes/{index}/url",
                details={"url": key[:2048], "others": len(others), "names": sorted(others)[:SHARED_NAMES_SHOWN]},
            )


@register(
    "MCP704",
    "server-json-invalid",
    Severity.WARNING,
    hint="Validate `server.json` before publishing; the registry's own validator reports the same paths.",
    doc="""Warns when the entry is not valid against the `server.json` schema it names in `$schema`, checked
    offline against the copy shipped with Fathom (every published version, 2025-07-09 to 2025-12-11; the newest
    when the named one is unknown). One finding per entry; details: the schema used and every error's JSON
    Pointer and message (at most 50). Bad: `"repository": {}` (url and source are required), a package
    `"version": "latest"`. Good: the entry passes `mcp-publisher validate`.""",
    scope="registry",
    status="preview",
)
def server_json_invalid(server: Mapping[str, Any], ctx: RegistryContext) -> Iterator[Hit]:
    from scanner.registry.schema_check import schema_errors

    date, named, errors = schema_errors(dict(server))
    if errors:
        first = errors[0]
        where = first["path"] or "the entry"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        yield Hit(
            f"Not valid against server.json schema {date}: {where}: {first['message'][:200]}{more}.",
            pointer="",
            details={"schema": date, "schema_named": named, "errors": errors},
        )


# The options each runner accepts before the package (npm exec / npx 10, uv 0.9 `uvx`): anything else named
# before the package is an option the runner refuses (or one that changes what runs, never the registry's call).
_RUNNER_FLAGS = {
    "npx": frozenset(
        {"-y", "--yes", "--no", "-p", "--package", "-c", "--call", "-q", "--quiet", "--silent", "--registry"}
        | {"--prefer-offline", "--prefer-online", "--offline", "--loglevel", "--cache", "-w", "--workspace"}
    ),
    "uvx": frozenset(
        {"--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--prerelease"}
        | {"--index", "--default-index", "--index-url", "--extra-index-url", "-q", "--quiet", "-v", "--verbose"}
        | {"--refresh", "--isolated", "--no-cache", "--offline", "--native-tls", "--env-file", "--no-env-file"}
        | {"--python-preference", "--resolution", "--exclude-newer", "--reinstall", "--upgrade", "-U"}
    ),
}
_DEFAULT_RUNNER = {"npm": "npx", "pypi": "uvx", "oci": "docker"}
_RUNNER_WORDS = frozenset({"npx", "npm", "exec", "bunx", "pnpx", "uvx", "uv", "pip", "python", "node", "docker"})
_RUNNER_OWN = frozenset({"run", "-y", "--yes", "-i", "--interactive", "--rm"})  # what the client always gives


def _argument_issues(
    kind: str, identifier: str, where: str, args: list[tuple[int, dict[str, Any]]], before_package: bool
) -> Iterator[dict[str, str]]:
    runner = _DEFAULT_RUNNER.get(kind, "")
    flags = _RUNNER_FLAGS.get(runner)
    previous_takes_value = False
    for index, arg in args:
        at = f"{where}/{index}"
        kind_of = _json.text(arg.get("type")) or ("named" if _json.text(arg.get("name")) else "positional")
        value = _json.text(arg.get("value")) or _json.text(arg.get("default"))
        required = arg.get("isRequired") is True or arg.get("is_required") is True
        boolean = _json.text(arg.get("format")) == "boolean"
        if kind_of == "named":
            flag = _json.text(arg.get("name"), limit=200) or ""
            if not flag.startswith("-"):
                yield {"what": f"named argument {flag[:40]!r} has no leading dash", "where": at}
            elif before_package and flags is not None and flag.split("=", 1)[0] not in flags:
                yield {"what": f"{runner} has no option {flag[:40]!r}; it belongs in packageArguments", "where": at}
            if required and value is None and not boolean:
                yield {"what": f"required argument {flag[:40]!r} has no value or default", "where": at}
            previous_takes_value = value is None and not boolean
            continue
        if required and value is None:
            label = _json.text(arg.get("valueHint")) or _json.text(arg.get("value_hint")) or "positional"
            yield {"what": f"required argument {label[:40]!r} has no value or default", "where": at}
        if value is None:
            previous_takes_value = False
            continue
        word = value.strip()
        if word.split("@", 1)[0] == identifier or (kind == "pypi" and re.split(r"[=<>~!]", word)[0] == identifier):
            yield {"what": f"argument {word[:40]!r} repeats the package", "where": at}
        elif word in _RUNNER_WORDS or (before_package and word in _RUNNER_OWN):
            yield {"what": f"runner word {word[:40]!r} in the arguments (the client adds the runner)", "where": at}
        elif before_package and word.startswith("-"):
            if flags is not None and word.split("=", 1)[0] not in flags:
                yield {"what": f"{runner} has no option {word[:40]!r}; it belongs in packageArguments", "where": at}
            previous_takes_value = "=" not in word
            continue
        elif before_package and runner in ("npx", "uvx") and not previous_takes_value:
            yield {
                "what": f"{runner} would run {word[:40]!r} as the package: it belongs in packageArguments",
                "where": at,
            }
        previous_takes_value = False


@register(
    "MCP705",
    "package-arguments-misplaced",
    Severity.WARNING,
    hint="Fix the arguments in `server.json` so the package runs as declared.",
    doc="""Warns when a package's arguments cannot be turned into the command its runner needs as published: a
    runner word (`npx`, `uvx`, `docker`, `run`) or a positional word before the package (npx and uvx run the first
    word that is not an option), the package repeated in its own arguments, a named argument without a leading
    dash, a required argument without a value or default, or a runtime option npx or uvx does not have. One
    finding per package; details: what and where (a JSON Pointer per issue). Bad: `runtimeArguments: [{"type":
    "positional", "value": "-y"}, {"type": "positional", "value": "my-server"}]`. Good: no runtime arguments;
    npx gets `-y` and the package from `registryType`, `identifier` and `version`.""",
    scope="registry",
    status="preview",
)
def package_arguments_misplaced(server: Mapping[str, Any], ctx: RegistryContext) -> Iterator[Hit]:
    for index, package in _packages(server):
        kind = (_json.text(_json.field(package, "registryType", "registry_type")) or "").lower()
        identifier = _json.text(package.get("identifier"), limit=500) or _json.text(package.get("name")) or ""
        issues: list[dict[str, str]] = []
        for key, before in (("runtimeArguments", True), ("packageArguments", False)):
            snake = "runtime_arguments" if before else "package_arguments"
            args = _json.field(package, key, snake)
            listed = (
                [(i, arg) for i, arg in enumerate(args[:64]) if isinstance(arg, dict)] if isinstance(args, list) else []
            )
            issues.extend(_argument_issues(kind, identifier, f"/packages/{index}/{key}", listed, before))
        if issues:
            more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
            yield Hit(
                f"Package {index} ({kind or '?'} {identifier[:80]}): {issues[0]['what']}{more}.",
                pointer=f"/packages/{index}",
                details={"issues": issues[:20]},
            )


REGISTRY_CODES = ("MCP701", "MCP702", "MCP703", "MCP704", "MCP705")


def url_index(servers: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """Every remote URL key (:func:`url_key`) with the names of the servers that declare it."""
    names: defaultdict[str, list[str]] = defaultdict(list)
    for server in servers:
        if not isinstance(server, dict):
            continue
        name = _json.text(server.get("name")) or ""
        for key in {url_key(url) for _, remote in _remotes(server) if (url := _json.text(remote.get("url")))}:
            if key is not None and name not in names[key]:
                names[key].append(name)
    return {key: tuple(found) for key, found in names.items() if len(found) > 1}


def entry_findings(server: Any, ctx: RegistryContext) -> tuple[Finding, ...]:
    """Every MCP7xx finding of one ``server.json`` object, in code order; none for a value that is not an object."""
    if not isinstance(server, dict):
        return ()
    found: list[Finding] = []
    for code in REGISTRY_CODES:
        rule = RULES[code]
        if rule.check is None:
            continue
        for hit in rule.check(server, ctx):
            found.append(make_finding(code, tool=None, message=hit.message, pointer=hit.pointer, details=hit.details))
    found.sort(key=Finding.sort_key)
    return tuple(found)


def registry_findings(servers: Sequence[Any]) -> list[tuple[Finding, ...]]:
    """The MCP7xx findings of every entry of one registry, in the order given (MCP703 compares them all)."""
    ctx = RegistryContext(by_url=url_index(servers))
    return [entry_findings(server, ctx) for server in servers]
