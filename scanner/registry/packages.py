"""Turn a server.json ``packages[]`` entry into a command, under the packages policy.

A package runs a stranger's code on this machine, so:

* nothing runs without ``run_packages``; the entry is skipped with ``package: needs --run-packages`` (the
  command it would run is still shown, so a dry run says exactly what would happen);
* the command never goes through a shell, and identifiers, versions and flags are checked so a registry value
  cannot become an option of the runner (an identifier starting with ``-``, say);
* the environment is scrubbed: ``entry.env`` is the *exact* environment of the process except ``HOME``, which
  the spawner sets to a fresh temporary directory per entry: ``PATH`` and ``LANG`` from ours, then the
  package's declared variables (defaults, or values from the environment under the naming rule of
  :mod:`scanner.registry.secrets`; a required one that is missing is left out and listed);
* memory is capped by the OS: npm and PyPI commands are wrapped by :func:`memlimit.limit_command`; an OCI image
  runs with ``docker run --memory``;
* secrets are never put on a command line (it is stored and printed): a package that needs a secret argument is
  skipped; secret environment variables reach the container as ``-e NAME`` with the value in ``entry.env``.

Runners: npm ``npx -y <id>@<version>``, PyPI ``uvx <id>==<version>``, OCI ``docker run -i --rm ... <image>``.
``runtimeHint`` is honoured when it names a runner we know for that registry type (npx/bunx/pnpx, uvx,
docker/podman); ``runtimeArguments`` go to the runner (for OCI only a short allow-list of docker flags, since
``-v`` or ``--privileged`` would hand the host to the image), ``packageArguments`` to the package.
NuGet, MCPB, cargo and go packages, and packages that serve HTTP on a local port, are skipped with a reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from scanner.models import ServerEntry, Transport
from scanner.registry import _json
from scanner.registry.interface import Options
from scanner.registry.memlimit import limit_command
from scanner.registry.secrets import lookup

_RUNNERS: dict[str, tuple[str, frozenset[str]]] = {
    "npm": ("npx", frozenset({"npx", "bunx", "pnpx"})),
    "pypi": ("uvx", frozenset({"uvx"})),
    "oci": ("docker", frozenset({"docker", "podman"})),
}
_PREFERENCE = {"npm": 0, "pypi": 1, "oci": 2}
_UNSUPPORTED = {
    "nuget": "nuget packages are not run (dnx needs the .NET 10 SDK)",
    "mcpb": "mcpb bundles are not run (download and unpack not supported)",
    "cargo": "cargo packages are not run",
    "go": "go packages are not run",
}
_IDENTIFIER = {
    "npm": re.compile(r"^(@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*$"),
    "pypi": re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?$"),
    "oci": re.compile(r"^[A-Za-z0-9][\w./:@-]*$"),
}
_VERSION = re.compile(r"^[A-Za-z0-9][\w.+!-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_OURS = frozenset({"PATH", "HOME"})
# docker flags a registry may pass: nothing that mounts, elevates, shares namespaces or lifts our limits.
_DOCKER_FLAGS = frozenset({"-e", "--env", "-p", "--publish", "--platform", "--init", "-t", "--tty", "-w", "--workdir"})
MAX_ARGS = 64


class _Unusable(Exception):
    """This package cannot be run under the policy; the message is the skip reason."""


def _registry_type(package: dict[str, Any]) -> str:
    kind = _json.text(_json.field(package, "registryType", "registry_type")) or _json.text(package.get("registry_name"))
    kind = (kind or "").lower()
    return "oci" if kind == "docker" else kind


def _identifier(package: dict[str, Any]) -> str | None:
    return _json.text(package.get("identifier"), limit=500) or _json.text(package.get("name"), limit=500)


def _transport_type(package: dict[str, Any]) -> str:
    transport = package.get("transport")
    if isinstance(transport, dict):
        return _json.text(transport.get("type")) or "stdio"
    return _json.text(transport) or "stdio"  # older rows: no transport means stdio


def _sort_key(indexed: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
    index, package = indexed
    return (0 if _transport_type(package) == "stdio" else 1, _PREFERENCE.get(_registry_type(package), 9), index)


def _render_args(server: str, args: list[dict[str, Any]], environ: Mapping[str, str]) -> list[str]:
    """Command-line words for ``runtimeArguments`` / ``packageArguments``; raises _Unusable."""
    words: list[str] = []
    for arg in args[:MAX_ARGS]:
        kind = _json.text(arg.get("type")) or ("named" if _json.text(arg.get("name")) else "positional")
        flag = _json.text(arg.get("name"), limit=200) if kind == "named" else None
        label = flag or _json.text(_json.field(arg, "valueHint", "value_hint"), limit=200) or "argument"
        secret = _json.flag(arg, "isSecret", "is_secret")
        required = _json.flag(arg, "isRequired", "is_required")
        variables = _json.obj(arg.get("variables"))
        template = _json.text(arg.get("value")) or _json.text(arg.get("default"))
        from_env = lookup(environ, server, label)
        if from_env is not None:
            if secret:
                raise _Unusable(f"package takes secret {label} on its command line (not supported)")
            template = from_env
        value: str | None = None
        if template is not None:
            supplied = {k: v for k in variables if (v := lookup(environ, server, k)) is not None}
            if any(_json.flag(_json.obj(variables.get(k)), "isSecret", "is_secret") for k in supplied):
                raise _Unusable(f"package takes a secret in {label} on its command line (not supported)")
            value, missing = fill_declared(template, variables, supplied)
            if missing:
                if required:
                    raise _Unusable(f"package argument {label} needs {{{missing[0]}}}")
                continue
        if kind == "named":
            if flag is None:
                continue
            if value is None and not required:
                continue  # an optional flag without a value changes behaviour we were not asked for
            words.extend([flag] if value is None else [flag, value])
        elif value is not None:
            words.append(value)
        elif required:
            raise _Unusable(f"package needs argument {label}")
    for word in words:
        if "\0" in word or len(word) > _json.MAX_TEXT:
            raise _Unusable("package argument is not usable text")
    return words


def fill_declared(template: str, variables: dict[str, Any], supplied: Mapping[str, str]) -> tuple[str, list[str]]:
    """Fill placeholders; only *declared* variables without a value count as missing (undeclared stay as is)."""
    from scanner.registry.serverjson import fill  # import here: serverjson imports this module

    text, missing = fill(template, variables, supplied)
    return text, [name for name in missing if name in variables]


def _build_env(
    server: str, variables: list[dict[str, Any]], environ: Mapping[str, str]
) -> tuple[dict[str, str], list[str], list[str]]:
    """The scrubbed environment (without HOME), the missing secret names and the other missing names."""
    env = {"PATH": environ.get("PATH") or os.defpath, "LANG": environ.get("LANG") or "C.UTF-8"}
    missing_secret: list[str] = []
    missing_other: list[str] = []
    for var in variables[:200]:
        name = _json.text(var.get("name"), limit=128)
        if name is None or not _ENV_NAME.match(name) or name in _OURS:
            continue
        value = lookup(environ, server, name)
        if value is None:
            template = _json.text(var.get("value")) or _json.text(var.get("default"))
            if template is not None:
                filled, missing = fill_declared(template, _json.obj(var.get("variables")), {})
                value = None if missing else filled
        if value is None or "\0" in value:
            if _json.flag(var, "isRequired", "is_required"):
                (missing_secret if _json.flag(var, "isSecret", "is_secret") else missing_other).append(name)
            continue
        env[name] = value
    return env, missing_secret, missing_other


def _command(server: str, package: dict[str, Any], env: Mapping[str, str], options: Options) -> tuple[str, ...]:
    kind = _registry_type(package)
    if kind in _UNSUPPORTED:
        raise _Unusable(_UNSUPPORTED[kind])
    if kind not in _RUNNERS:
        raise _Unusable(f"package registry type {kind or '(none)'!r} is not supported")
    transport = _transport_type(package)
    if transport != "stdio":
        raise _Unusable(f"package serves {transport[:40]} on a local port (not supported)")
    identifier = _identifier(package)
    if identifier is None or not _IDENTIFIER[kind].match(identifier):
        raise _Unusable(f"{kind} package identifier is not usable: {str(identifier)[:80]!r}")
    version = _json.text(package.get("version"), limit=100)
    if version is not None and (not _VERSION.match(version) or version == "latest"):
        version = None if version == "latest" else version
        if version is not None:
            raise _Unusable(f"{kind} package version is not usable: {version[:80]!r}")
    default_runner, known = _RUNNERS[kind]
    hint = _json.text(_json.field(package, "runtimeHint", "runtime_hint"), limit=50)
    runner = hint if hint in known else default_runner
    runtime_args = _render_args(
        server, _json.items(_json.field(package, "runtimeArguments", "runtime_arguments")), options.environ
    )
    package_args = _render_args(
        server, _json.items(_json.field(package, "packageArguments", "package_arguments")), options.environ
    )
    if kind == "npm":
        spec = f"{identifier}@{version}" if version else identifier
        head = [runner, "-y"] if runner == "npx" else [runner]
        return limit_command([*head, *runtime_args, spec, *package_args], options.memory_limit_mb)
    if kind == "pypi":
        spec = f"{identifier}=={version}" if version else identifier
        return limit_command([runner, *runtime_args, spec, *package_args], options.memory_limit_mb)
    for word in runtime_args:
        if word.startswith("-") and word.split("=", 1)[0] not in _DOCKER_FLAGS:
            raise _Unusable(f"oci runtime argument {word[:40]!r} is not allowed")
    image = identifier if version is None or ":" in identifier.rsplit("/", 1)[-1] else f"{identifier}:{version}"
    limit = f"{int(options.memory_limit_mb)}m"
    passed = [word for name in env if name not in ("PATH", "LANG") for word in ("-e", name)]
    return (
        runner,
        "run",
        "-i",
        "--rm",
        f"--memory={limit}",
        f"--memory-swap={limit}",
        *runtime_args,
        *passed,
        image,
        *package_args,
    )


def resolve_packages(
    name: str,
    version: str | None,
    packages: list[dict[str, Any]],
    *,
    source: str,
    options: Options,
    remote_problems: list[str] | None = None,
) -> ServerEntry:
    """The entry for the first runnable package (stdio first; npm, then PyPI, then OCI), or a skipped one."""
    reasons: list[str] = []
    for _, package in sorted(enumerate(packages), key=_sort_key):
        env, missing_secret, missing_other = _build_env(
            name, _json.items(_json.field(package, "environmentVariables", "environment_variables")), options.environ
        )
        try:
            command = _command(name, package, env, options)
        except _Unusable as exc:
            reasons.append(str(exc))
            continue
        kind = _registry_type(package)
        description: dict[str, Any] = {
            "registryType": kind,
            "identifier": _identifier(package),
            "version": _json.text(package.get("version"), limit=100),
            "runner": command[0] if kind == "oci" else os.path.basename(_runner_of(command)),
            "memory_limit_mb": int(options.memory_limit_mb),
            "missing_inputs": missing_other,
        }
        skip = None
        if not options.run_packages:
            skip = f"package ({kind} {description['identifier']}): needs --run-packages"
            env = {}
        return ServerEntry(
            name=name,
            transport=Transport.STDIO,
            command=command,
            env=env,
            version=version,
            source=source,
            skip=skip,
            anonymous=bool(missing_secret),
            secret_header_names=tuple(missing_secret),
            package=description,
        )
    reason = reasons[0] if reasons else "no runnable package"
    if remote_problems:
        reason = f"{remote_problems[0]}; {reason}"
    return ServerEntry(name=name, transport=Transport.STDIO, version=version, source=source, skip=reason)


def _runner_of(command: tuple[str, ...]) -> str:
    """The runner inside a memory-limit wrapper (the word after ``--``, or after the limit for the Python form)."""
    if "--" in command:
        return command[command.index("--") + 1]
    return command[5] if len(command) > 5 else command[0]
