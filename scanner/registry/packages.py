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
* memory is capped by the OS: npm and PyPI commands are started under ``memory_limit_mb`` (kept in the entry's
  package facts) by :mod:`scanner.packages.sandbox`, so the stored command is the runner's own; an OCI image
  runs with ``docker run --memory``;
* secrets are never put on a command line (it is stored and printed): a package that needs a secret argument is
  skipped; secret environment variables reach the container as ``-e NAME`` with the value in ``entry.env``.

Runners: npm ``npx -y <id>@<version>``, PyPI ``uvx <id>==<version>``, OCI ``docker run -i --rm ... <image>``.
``runtimeHint`` is honoured when it names a runner we know for that registry type (npx/bunx/pnpx, uvx,
docker/podman); ``runtimeArguments`` go to the runner (for OCI only a short allow-list of docker flags, since
``-v`` or ``--privileged`` would hand the host to the image; a ``-p`` port is always published on 127.0.0.1 only),
``packageArguments`` to the package.
NuGet, MCPB, cargo and go packages are skipped with a reason. A package that serves Streamable HTTP or SSE on a
local port runs the same way, with its port input set by :mod:`scanner.registry.localport` (skipped when it
declares no input Fathom can set the port through, and for OCI images).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from scanner.models import ServerEntry, Transport
from scanner.registry import _json, localport
from scanner.registry.interface import Options
from scanner.registry.placeholders import fill
from scanner.registry.secrets import lookup, secret_env_name

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
_OURS = frozenset({"PATH", "HOME", "TMPDIR"})
# Installer settings (registry, index, proxy, cache): Fathom sets these, never a registry entry.
_INSTALLER_NAME = re.compile(
    r"^(npm_config_|UV_|PIP_|NODE_EXTRA_CA_CERTS$|SSL_CERT_|REQUESTS_CA_BUNDLE$|(HTTPS?|ALL|NO)_PROXY$)", re.I
)
# Variables that change how a runtime or the shell loads code (a registry value there runs code of its own in the
# runner, before the package: NODE_OPTIONS=--import=data:..., LD_PRELOAD, PYTHONPATH): never set from registry
# data. Matched case-insensitively; names Fathom itself sets (HOME, TMPDIR, PATH) are refused apart.
_CODE_LOADING = re.compile(
    r"^(LD_|DYLD_|PYTHON(?!IOENCODING$|UNBUFFERED$|UTF8$)|NODE_(OPTIONS|PATH|REPL_EXTERNAL_MODULE|PRESERVE_SYMLINKS"
    r"|PRESERVE_SYMLINKS_MAIN|TLS_REJECT_UNAUTHORIZED|ICU_DATA|V8_COVERAGE)$|NPX_|BUN_|DENO_|COREPACK_|GIT_|XDG_"
    r"|PERL5?LIB$|PERL5OPT$|RUBYOPT$|RUBYLIB$|GEM_(HOME|PATH)$|JAVA_TOOL_OPTIONS$|_JAVA_OPTIONS$|JDK_JAVA_OPTIONS$"
    r"|CLASSPATH$|BASH_ENV$|ENV$|SHELLOPTS$|BASHOPTS$|PS4$|PROMPT_COMMAND$|IFS$|CDPATH$|GCONV_PATH$|GLIBC_TUNABLES$"
    r"|MALLOC_|LOCPATH$|NLSPATH$|HOSTALIASES$|RES_OPTIONS$|LOCALDOMAIN$|TZDIR$|OPENSSL_(CONF|ENGINES|MODULES)$"
    r"|SSLKEYLOGFILE$|DOCKER_|BUILDKIT_|CONTAINERS_)",
    re.IGNORECASE,
)
# Exact versions: what may be called pinned (ranges and tags, "1.x", "^1.2.0", "next", run as given but unpinned).
_EXACT = {
    "npm": re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"),
    # PEP 440's public and local versions, every spelling it allows (1.0-1, v1.0, 1.0A1, 2.0.post1.dev0).
    "pypi": re.compile(
        r"^v?(\d+!)?\d+(\.\d+)*([-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
        r"(-\d+|[-_.]?(post|rev|r)[-_.]?\d*)?([-_.]?dev[-_.]?\d*)?(\+[a-z0-9]+([-_.][a-z0-9]+)*)?$",
        re.IGNORECASE,
    ),
}
# The value of uvx --python: a version request (3.12, >=3.11, cpython3.12, pypy@3.10), never a path to run.
_PYTHON_REQUEST = re.compile(r"^[A-Za-z]*[@-]?[<>=~!]{0,2}[0-9][0-9.]*[+t]?$|^[A-Za-z]+$")
# docker flags a registry may pass: nothing that mounts, elevates, shares namespaces or lifts our limits.
_DOCKER_FLAGS = frozenset({"-e", "--env", "-p", "--publish", "--platform", "--init", "-t", "--tty", "-w", "--workdir"})
_DOCKER_OWN = frozenset({"-i", "--interactive", "--rm"})  # always given by us
_DOCKER_BOOLEAN = frozenset({*_DOCKER_OWN, "--init", "-t", "--tty"})  # flags that never take a value
_IMAGE_PINNED = re.compile(r"(:[\w][\w.-]*$)|(@sha256:[0-9a-f]{64}$)")  # a tag on the last part, or a digest
# Runner options a registry may put before the package (they change how, not what, runs); the runner's own
# flags that Fathom always gives are dropped when repeated.
_RUNNER_OPTIONS = {"uvx": frozenset({"--python", "--prerelease"}), "npx": frozenset({"--quiet", "--silent"})}
_RUNNER_OWN = {"npx": frozenset({"-y", "--yes"}), "bunx": frozenset(), "pnpx": frozenset(), "uvx": frozenset()}
MAX_ARGS = 64


class _Unusable(Exception):
    """This package cannot be run as declared; the message is the skip reason, ``outcome`` what to record."""

    def __init__(self, reason: str, outcome: str = "skipped") -> None:
        super().__init__(reason)
        self.outcome = outcome


def _needs(reason: str) -> _Unusable:
    return _Unusable(f"needs configuration: {reason}", "needs_configuration")


def _bad_data(reason: str) -> _Unusable:
    return _Unusable(f"registry data: {reason} (a publisher's mistake)")


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


@dataclass(frozen=True)
class _Arg:
    """One ``runtimeArguments`` / ``packageArguments`` item, its value resolved (None: no value)."""

    kind: str  # "named" or "positional"
    flag: str | None
    label: str
    value: str | None
    required: bool
    boolean: bool
    defaulted: bool = False  # the value is the argument's ``default`` (no ``value``, nothing from the environment)
    choices: tuple[str, ...] = ()


def _resolve_args(server: str, args: list[dict[str, Any]], environ: Mapping[str, str]) -> list[_Arg]:
    """Each argument with its value: ``value`` (its ``{variables}`` filled), else ``default``, else one set in the
    environment under the secrets naming rule. Raises _Unusable for a secret on the command line or a required
    value whose variable has no value."""
    resolved: list[_Arg] = []
    if len(args) > MAX_ARGS:
        raise _Unusable(f"package declares {len(args)} arguments (at most {MAX_ARGS} are read)")
    for arg in args:
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
            filled, missing = fill_declared(template, variables, supplied)
            if any(_json.flag(_json.obj(variables.get(k)), "isSecret", "is_secret") for k in missing):
                raise _Unusable(f"package takes a secret in {label} on its command line (not supported)")
            if missing and required:
                raise _needs(f"argument {label} needs {{{missing[0]}}} (set {secret_env_name(server, missing[0])})")
            value = None if missing else filled
        if value is not None and ("\0" in value or len(value) > _json.MAX_TEXT):
            raise _Unusable("package argument is not usable text")
        boolean = _json.text(arg.get("format")) == "boolean"
        defaulted = from_env is None and _json.text(arg.get("value")) is None and value is not None
        listed = arg.get("choices")
        choices = tuple(c[:100] for c in listed[:50] if isinstance(c, str)) if isinstance(listed, list) else ()
        resolved.append(_Arg(kind, flag, label, value, required, boolean, defaulted, choices))
    return resolved


def _words(server: str, args: list[_Arg]) -> list[str]:
    """Command-line words for resolved arguments (schema: a named argument is ``--flag value``, a positional one
    its value verbatim). An optional argument without a value is left out, since a client would have asked; a
    required one without a value skips the entry, except a required ``boolean`` flag, which is the flag alone."""
    words: list[str] = []
    for arg in args:
        if arg.kind == "named":
            if arg.flag is None:
                continue
            if arg.value is None and not (arg.required and arg.boolean):
                if arg.required:
                    raise _needs(f"{arg.flag} needs a value (set {secret_env_name(server, arg.flag)})")
                continue
            if not arg.flag.startswith("-"):
                raise _bad_data(f"named argument {arg.flag[:40]!r} has no leading dash (the schema's name has them)")
            words.extend([arg.flag] if arg.value is None else [arg.flag, arg.value])
        elif arg.value is not None:
            words.append(arg.value)
        elif arg.required:
            raise _needs(f"argument {arg.label} has no value (set {secret_env_name(server, arg.label)})")
    return words


_TRANSPORT_FLAG = re.compile(r"^-{0,2}(mcp[-_])?transport([-_](type|mode))?$", re.IGNORECASE)
_LISTENER_FLAG = re.compile(r"^-{0,2}(http[-_]|server[-_]|mcp[-_])?(port|host|bind|listen|address)$", re.IGNORECASE)


def _declared_transport(transport: str, args: list[_Arg], notes: list[str]) -> list[_Arg]:
    """The package arguments with the declared transport winning over defaults: for a stdio package, an argument
    that selects the transport (``--transport``, or one whose choices include ``stdio``) is set to ``stdio``, and
    a listener's ``--port`` / ``--host`` taken from its default is left out, each with a note (codeweaver's
    ``--transport`` defaults to streamable-http on its stdio package). Other transports are left as declared."""
    if transport != "stdio":
        return args
    kept: list[_Arg] = []
    for arg in args:
        flag = arg.flag or ""
        selects = arg.kind == "named" and (_TRANSPORT_FLAG.match(flag) or "stdio" in arg.choices)
        if selects and arg.value is not None and arg.value.lower() != "stdio":
            notes.append(f"package argument {flag} {arg.value[:40]!r} set to 'stdio' (the declared transport)")
            kept.append(replace(arg, value="stdio", defaulted=False))
        elif arg.kind == "named" and arg.defaulted and not arg.required and _LISTENER_FLAG.match(flag):
            notes.append(f"package argument {flag} left out (its default is for an HTTP listener; stdio declared)")
        else:
            kept.append(arg)
    return kept


def _same_package(kind: str, word: str, identifier: str) -> bool:
    """Whether ``word`` names the declared package again (any version): ``mirror-mcp@latest``, an image's repo."""
    if kind == "npm":
        name = word[1:].split("@", 1)[0] if word.startswith("@") else word.split("@", 1)[0]
        return (("@" + name) if word.startswith("@") else name) == identifier
    if kind == "pypi":
        return re.split(r"[=<>~!@\[ ]", word, maxsplit=1)[0].lower() == identifier.lower()
    return _image_repo(word) == _image_repo(identifier)


def _image_repo(image: str) -> str:
    """An image reference without tag or digest and without the implied ``docker.io/`` / ``library/``."""
    repo = image.split("@", 1)[0]
    head, _, last = repo.rpartition("/")
    repo = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    for prefix in ("docker.io/", "index.docker.io/", "library/"):
        repo = repo.removeprefix(prefix)
    return repo


def _runner_words(
    kind: str, runner: str, identifier: str, server: str, args: list[_Arg], notes: list[str]
) -> list[str]:
    """The ``runtimeArguments`` words that may go before an npm or PyPI package.

    npx and uvx take the first word that is not an option as the package to run, so a positional runtime
    argument would run another package: the runner's own flags repeated (``-y``) and the package repeated
    (``mirror-mcp@latest``) are dropped with a note, anything else skips the entry as a registry mistake."""
    allowed = _RUNNER_OPTIONS.get(runner, frozenset())
    kept: list[str] = []
    for word in _words(server, args):
        if word in _RUNNER_OWN.get(runner, frozenset()):
            notes.append(f"runtime argument {word!r} dropped ({runner} already gets it)")
        elif not word.startswith("-") and _same_package(kind, word, identifier):
            notes.append(f"runtime argument {word[:80]!r} dropped (repeats the package; the declared version runs)")
        elif word.startswith("-") and word.split("=", 1)[0] in allowed:
            if "=" in word:
                _option_value(runner, *word.split("=", 1))
            kept.append(word)
        elif kept and kept[-1] in allowed and "=" not in kept[-1]:
            _option_value(runner, kept[-1], word)
            kept.append(word)  # the value of an allowed option
        elif word.startswith("-"):
            raise _bad_data(
                f"runtime argument {word[:40]!r} is not one of the {runner} options Fathom passes; it belongs in "
                "packageArguments"
            )
        else:
            raise _bad_data(
                f"runtimeArguments put {word[:40]!r} before the package, where {runner} would run it as the "
                "package; it belongs in packageArguments"
            )
    return kept


def _option_value(runner: str, option: str, value: str) -> None:
    """Refuse a runner option value that names a file to run (``uvx --python /tmp/x`` makes uv execute it)."""
    if option == "--python" and not _PYTHON_REQUEST.match(value):
        raise _bad_data(f"{runner} {option} {value[:40]!r} is not a Python version request (a path is never passed)")


def _docker_words(identifier: str, server: str, args: list[_Arg], notes: list[str]) -> list[str]:
    """The ``runtimeArguments`` words for ``docker run``: docker's own ``run -i --rm`` repeated and the image
    repeated are dropped; ``-e NAME`` is dropped (declared variables are passed by name anyway); a flag outside
    the allow-list, or any other positional word (docker would take it as the image), skips the entry."""
    pairs: list[tuple[str | None, str | None]] = []
    index = 0
    while index < len(args):
        arg = args[index]
        following = args[index + 1] if index + 1 < len(args) else None
        if (
            arg.kind == "named"
            and arg.value is None
            and arg.flag not in _DOCKER_BOOLEAN
            and following is not None
            and following.kind == "positional"
        ):
            pairs.append((arg.flag, following.value))  # a flag and its value written as two arguments
            index += 2
            continue
        if arg.kind == "named" and arg.value is None:
            if arg.flag in _DOCKER_BOOLEAN:
                pairs.append((arg.flag, None))
            elif arg.required:
                _words(server, [arg])  # a required flag without a value: raises "needs configuration"
            index += 1
            continue
        pairs.append((arg.flag, arg.value) if arg.kind == "named" else (None, arg.value))
        index += 1
    kept: list[str] = []
    for position, (flag, value) in enumerate(pairs):
        if flag is None:
            if value is None:
                continue
            if position == 0 and value == "run":
                notes.append("runtime argument 'run' dropped (docker run is the runner)")
            elif value in _DOCKER_OWN:
                notes.append(f"runtime argument {value!r} dropped (docker run already gets it)")
            elif _same_package("oci", value, identifier):
                notes.append(f"runtime argument {value[:80]!r} dropped (repeats the image; the declared one runs)")
            else:
                raise _bad_data(f"runtimeArguments put {value[:40]!r} where docker expects the image")
            continue
        name = flag.split("=", 1)[0]
        if name in _DOCKER_OWN:
            notes.append(f"runtime argument {flag!r} dropped (docker run already gets it)")
        elif name in ("-e", "--env") and (value is None or "=" not in value):
            notes.append(f"runtime argument {flag} {value or ''} dropped (declared variables are passed by name)")
        elif name not in _DOCKER_FLAGS:
            raise _Unusable(f"oci runtime argument {flag[:40]!r} is not allowed")
        elif name in ("-p", "--publish"):
            published = value if value is not None else (flag.split("=", 1)[1] if "=" in flag else "")
            bound = _loopback_publish(published)
            if bound != published:
                notes.append(f"runtime argument -p {published[:60]!r} bound to 127.0.0.1 (published as {bound!r})")
            kept.extend(["-p", bound])
        else:
            kept.extend([flag] if value is None else [flag, value])
    return kept


_PORTS = re.compile(r"^\d{0,5}(-\d{1,5})?$")


def _loopback_publish(value: str) -> str:
    """A ``docker run -p`` value bound to 127.0.0.1 whatever address it names: ``8080`` (a random host port on
    every interface) -> ``127.0.0.1::8080``, ``8080:80`` and ``0.0.0.0:8080:80`` or ``[::]:8080:80`` ->
    ``127.0.0.1:8080:80``; a protocol suffix (``/udp``) is kept. A package's port is never published beyond this
    machine (a registry entry cannot open this host to its network). A value docker would not read as a port
    mapping skips the entry as a registry mistake."""
    spec, slash, protocol = value.partition("/")
    if slash and protocol not in ("tcp", "udp", "sctp"):
        raise _bad_data(f"oci -p {value[:60]!r} names protocol {protocol[:20]!r}")
    if spec.startswith("["):
        _address, bracket, rest = spec[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise _bad_data(f"oci -p {value[:60]!r} is not a port mapping")
        parts = rest[1:].split(":")
        if len(parts) != 2:
            raise _bad_data(f"oci -p {value[:60]!r} is not a port mapping")
        host, container = parts
    else:
        parts = spec.split(":")
        if len(parts) == 1:
            host, container = "", parts[0]
        elif len(parts) == 2:
            host, container = parts
        elif len(parts) == 3:
            host, container = parts[1], parts[2]
        else:
            raise _bad_data(f"oci -p {value[:60]!r} is not a port mapping (an IPv6 address goes in brackets)")
    if not container or not _PORTS.match(host) or not _PORTS.match(container):
        raise _bad_data(f"oci -p {value[:60]!r} is not a port mapping")
    return f"127.0.0.1:{host}:{container}{slash}{protocol}"


def fill_declared(template: str, variables: dict[str, Any], supplied: Mapping[str, str]) -> tuple[str, list[str]]:
    """Fill placeholders; only *declared* variables without a value count as missing (undeclared stay as is)."""
    text, missing = fill(template, variables, supplied)
    return text, [name for name in missing if name in variables]


def _build_env(
    server: str, variables: list[dict[str, Any]], environ: Mapping[str, str], dropped: list[str]
) -> tuple[dict[str, str], list[str], list[str]]:
    """The scrubbed environment (without HOME), the missing secret names and the other missing names; the names
    of variables that would change how the runtime loads code are left out and added to ``dropped``."""
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
        if _INSTALLER_NAME.match(name):
            continue  # a registry must not point the installer at another index or registry
        if _CODE_LOADING.match(name):
            dropped.append(name)
            continue
        env[name] = value
    return env, missing_secret, missing_other


@dataclass(frozen=True)
class _Plan:
    command: tuple[str, ...]
    runner: str
    spec: str
    pinned: bool
    notes: tuple[str, ...]


def _version(kind: str, package: dict[str, Any], identifier: str, notes: list[str]) -> str | None:
    """The declared version, or None where the entry pins none (the schema requires one: run latest, flagged)."""
    version = _json.text(package.get("version"), limit=100)
    if kind == "oci" and _IMAGE_PINNED.search(identifier):
        if version is not None and not identifier.endswith((f":{version}", version)):
            raise _bad_data(f"image {identifier[:80]!r} and version {version[:40]!r} disagree")
        return None
    if version == "latest" or version is None:
        notes.append("registry data: no version pinned (the schema requires one); latest is run")
        return None
    if not _VERSION.match(version):
        raise _bad_data(f"{kind} package version {version[:80]!r} is not an exact version")
    if kind in _EXACT and not _EXACT[kind].match(version):
        notes.append(f"registry data: version {version[:40]!r} is a range or a tag, not a pinned version")
    return version


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa", ".intranet", ".corp")


def _image_host_problem(identifier: str) -> str | None:
    """Why the registry host an image names is refused under the address policy, or None.

    Docker reads the first part of a reference as a host when it has a ``.`` or a ``:`` or is ``localhost``. An
    address (in any form ``inet_aton`` reads: ``127.1``, ``2130706433``) is judged as a remote's is
    (:func:`scanner.registry.address.classify`: loopback, private, link-local, metadata ... refused); a name that
    is local by its form (``localhost``, ``*.internal``, ``*.local``, one label) is refused; any other name is
    resolved by Docker, not checked here (docs/registry.md)."""
    from scanner.registry.address import classify

    first, slash, _ = identifier.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return None  # Docker Hub
    host = first.rsplit(":", 1)[0] if first.count(":") == 1 else first
    try:
        address = ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        address = None
    if address is not None:
        reason = classify(address)
        return f"a {reason} address" if reason else None
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith(_LOCAL_SUFFIXES) or "." not in lowered:
        return "a local name"
    return None


def _pinned(kind: str, version: str | None) -> bool:
    """Whether ``version`` names one exact release (a range or a tag can change under the same words)."""
    return version is not None and bool(_EXACT[kind].match(version))


def _command(server: str, package: dict[str, Any], env: Mapping[str, str], options: Options) -> _Plan:
    kind = _registry_type(package)
    if kind in _UNSUPPORTED:
        raise _Unusable(_UNSUPPORTED[kind])
    if kind not in _RUNNERS:
        raise _Unusable(f"package registry type {kind or '(none)'!r} is not supported")
    identifier = _identifier(package)
    if identifier is None or not _IDENTIFIER[kind].match(identifier):
        raise _Unusable(f"{kind} package identifier is not usable: {str(identifier)[:80]!r}")
    if kind == "oci" and (host_problem := _image_host_problem(identifier)) is not None:
        raise _Unusable(f"oci image {identifier[:80]!r} names a registry host that is {host_problem} (not pulled)")
    notes: list[str] = []
    version = _version(kind, package, identifier, notes)
    default_runner, known = _RUNNERS[kind]
    hint = _json.text(_json.field(package, "runtimeHint", "runtime_hint"), limit=50)
    runner = hint if hint in known else default_runner
    runtime = _resolve_args(
        server, _json.items(_json.field(package, "runtimeArguments", "runtime_arguments")), options.environ
    )
    package_args = _words(
        server,
        _declared_transport(
            _transport_type(package),
            _resolve_args(
                server, _json.items(_json.field(package, "packageArguments", "package_arguments")), options.environ
            ),
            notes,
        ),
    )
    if kind == "npm":
        runtime_words = _runner_words(kind, runner, identifier, server, runtime, notes)
        spec = f"{identifier}@{version or 'latest'}"
        head = [runner, "-y"] if runner == "npx" else [runner]
        command = (*head, *runtime_words, spec, *package_args)
        return _Plan(command, runner, spec, _pinned(kind, version), tuple(notes))
    if kind == "pypi":
        runtime_words = _runner_words(kind, runner, identifier, server, runtime, notes)
        spec = f"{identifier}=={version}" if version else f"{identifier}@latest"
        command = (runner, *runtime_words, spec, *package_args)
        return _Plan(command, runner, spec, _pinned(kind, version), tuple(notes))
    runtime_words = _docker_words(identifier, server, runtime, notes)
    pinned = version is not None or bool(_IMAGE_PINNED.search(identifier))
    image = identifier if _IMAGE_PINNED.search(identifier) else f"{identifier}:{version or 'latest'}"
    limit = f"{int(options.memory_limit_mb)}m"
    passed = [word for name in env if name not in ("PATH", "LANG") for word in ("-e", name)]
    command = (
        runner,
        "run",
        "-i",
        "--rm",
        f"--memory={limit}",
        f"--memory-swap={limit}",
        *runtime_words,
        *passed,
        image,
        *package_args,
    )
    return _Plan(command, runner, image, pinned, tuple(notes))


def resolve_packages(
    name: str,
    version: str | None,
    packages: list[dict[str, Any]],
    *,
    source: str,
    options: Options,
    remote_problems: list[str] | None = None,
) -> ServerEntry:
    """The entry for the first runnable package (stdio first; npm, then PyPI, then OCI), or a skipped one.

    A package that cannot run as declared is passed over for the next; when none can, the entry is skipped with
    the first reason, and ``package["skip_outcome"]`` says what to record (``needs_configuration`` for a missing
    argument value, ``runner_missing`` when the runner is not on ``PATH``, else ``skipped``).
    """
    failures: list[tuple[_Unusable, dict[str, Any]]] = []
    for _, declared in sorted(enumerate(packages), key=_sort_key):
        try:
            package, local = _local_port(declared)
        except _Unusable as exc:
            failures.append((exc, declared))
            continue
        dropped: list[str] = []
        env, missing_secret, missing_other = _build_env(
            name,
            _json.items(_json.field(package, "environmentVariables", "environment_variables")),
            options.environ,
            dropped,
        )
        try:
            plan = _command(name, package, env, options)
            if local is not None and not localport.port_in(plan.command, env):
                raise _Unusable(f"the port input ({local.via}) was replaced by a value from the environment")
        except _Unusable as exc:
            failures.append((exc, package))
            continue
        kind = _registry_type(package)
        description: dict[str, Any] = {
            "registryType": kind,
            "identifier": _identifier(package),
            "version": _json.text(package.get("version"), limit=100),
            "runner": plan.runner,
            "spec": plan.spec,
            "pinned": plan.pinned,
            "memory_limit_mb": int(options.memory_limit_mb),
            "missing_inputs": missing_other,
        }
        secret_names = _secret_names(package)
        if secret_names:
            description["secret_env_names"] = secret_names
        left_out = "left out (it changes how the runtime loads code)"
        notes = [*plan.notes, *(f"registry data: variable {variable} {left_out}" for variable in dropped)]
        if notes:
            description["notes"] = notes
        if local is not None:
            description["local_port"] = local.describe()
        skip = None
        if not options.run_packages:
            skip = f"package ({kind} {description['identifier']}): needs --run-packages"
            env = {}
        elif runner_path(plan.runner, options.environ) is None:
            skip = f"runner missing: {plan.runner} is not on PATH (needed for {kind} packages)"
            description["skip_outcome"] = "runner_missing"
        return ServerEntry(
            name=name,
            transport=Transport(local.transport) if local is not None else Transport.STDIO,
            command=plan.command,
            env=env,
            version=version,
            source=source,
            skip=skip,
            anonymous=bool(missing_secret),
            secret_header_names=tuple(missing_secret),
            package=description,
            package_source=declared,
        )
    reason = str(failures[0][0]) if failures else "no runnable package"
    if remote_problems:
        reason = f"{remote_problems[0]}; {reason}"
    package_facts = _declared(failures[0][1]) if failures else None
    if failures and options.run_packages:
        package_facts = {**(package_facts or {}), "skip_outcome": failures[0][0].outcome}
    return ServerEntry(
        name=name, transport=Transport.STDIO, version=version, source=source, skip=reason, package=package_facts
    )


def _declared(package: dict[str, Any]) -> dict[str, Any] | None:
    """What a package that cannot run declared (registry type, identifier, version), so a skip keeps its
    identity in the store, the dry run and the report; None when it names no package at all."""
    identifier = _identifier(package)
    if identifier is None:
        return None
    facts: dict[str, Any] = {"registryType": _registry_type(package) or None, "identifier": identifier}
    facts["version"] = _json.text(package.get("version"), limit=100)
    return {key: value for key, value in facts.items() if value is not None}


def _local_port(package: dict[str, Any]) -> tuple[dict[str, Any], localport.LocalPort | None]:
    """``package`` as is for stdio; for a local-port server, a copy with its port input set to the sentinel, and
    the plan (:mod:`scanner.registry.localport`). Raises _Unusable when it cannot run that way."""
    transport = _transport_type(package)
    if transport == "stdio":
        return package, None
    kind = _registry_type(package)
    if kind in _UNSUPPORTED:
        raise _Unusable(_UNSUPPORTED[kind])
    if transport not in localport.LOCAL_TRANSPORTS:
        raise _Unusable(f"package transport {transport[:40]!r} is not supported")
    if kind == "oci":
        raise _Unusable(f"oci image serves {transport} on a local port (container port mapping not supported)")
    for header in _json.items(_json.obj(package.get("transport")).get("headers")):
        if _json.flag(header, "isRequired", "is_required"):
            label = _json.text(header.get("name"), limit=100) or "header"
            raise _needs(f"local server needs header {label} (headers for local-port packages are not sent)")
    try:
        plan = localport.plan(package, transport)
    except localport.NotLocalPort as exc:
        raise _Unusable(str(exc)) from None
    return plan.package, plan


def _secret_names(package: dict[str, Any]) -> list[str]:
    """The declared secret variables' names: their values are blanked from anything kept of a run."""
    variables = _json.items(_json.field(package, "environmentVariables", "environment_variables"))
    names = [_json.text(var.get("name"), limit=128) for var in variables if _json.flag(var, "isSecret", "is_secret")]
    return [name for name in names if name]


def runner_path(runner: str, environ: Mapping[str, str]) -> str | None:
    """Where ``runner`` is on the ``PATH`` the package will get (ours when the environment has none)."""
    return shutil.which(runner, path=environ.get("PATH") or os.defpath)
