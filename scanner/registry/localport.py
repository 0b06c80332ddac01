"""Packages that serve MCP over HTTP on a local port: which declared input carries the port, and the URL to use.

A package whose ``transport.type`` is ``streamable-http`` or ``sse`` is a server the client starts and then
connects to (``transport.url``, e.g. ``http://127.0.0.1:{port}/mcp``). Fathom runs it with a free loopback
port of its own choosing, so it needs one declared input it can set the port through:

* the URL's port is a ``{variable}``: the argument (by name without leading dashes, or by ``valueHint``) or the
  environment variable of that name carries it (the schema: URL variables name arguments or variables);
* the URL's port is a literal (``http://localhost:8080/mcp``): an argument or environment variable whose name
  says ``port`` and whose value or default is that literal carries it.

Without one the entry is skipped (a fixed port cannot be shared between concurrent scans, and a port already
in use could be another program answering). The chosen port is filled into that input where
:data:`PORT_SENTINEL` stands at resolution time (:mod:`scanner.packages.localport` does it at run time), and
the URL connected to is always ``127.0.0.1`` with the declared path, whatever host the template names.
OCI images are not run this way (a container's port mapping is not declared in a form Fathom can rewrite).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from scanner.registry import _json

LOCAL_TRANSPORTS = frozenset({"streamable-http", "sse"})
#: Stands for the port in a resolved command or environment until the package is started.
PORT_SENTINEL = "<free-port>"
_URL = re.compile(r"^(?P<scheme>https?)://(?P<host>\[[^\]]*\]|[^/:?#]*)(?::(?P<port>[^/?#]*))?(?P<rest>[/?#].*)?$")
_VARIABLE = re.compile(r"^\{([A-Za-z0-9_.-]{1,100})\}$")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class NotLocalPort(Exception):
    """The package serves on a local port in a way Fathom cannot run; the message is the skip reason."""


@dataclass(frozen=True)
class LocalPort:
    """How to run one local-port package: the package with the port input set to the sentinel, and the URL."""

    package: dict[str, Any]
    transport: str  # "streamable-http" or "sse"
    url: str  # http://127.0.0.1:{port}/path (``{port}`` filled at run time)
    declared_url: str
    via: str  # "argument --port", "environment MCP_HTTP_PORT"

    def describe(self) -> dict[str, str]:
        return {"transport": self.transport, "url": self.url, "declared_url": self.declared_url, "port_via": self.via}


def _bare(name: str) -> str:
    return name.lstrip("-").lower()


def _arg_matches(arg: dict[str, Any], variable: str | None, literal: str | None) -> bool:
    name = _json.text(arg.get("name"), limit=200) or ""
    hint = _json.text(_json.field(arg, "valueHint", "value_hint"), limit=200) or ""
    if variable is not None:
        return variable.lower() in (_bare(name), hint.lower()) and bool(name or hint)
    said = _json.text(arg.get("value")) or _json.text(arg.get("default"))
    return "port" in f"{name} {hint}".lower() and said == literal


def _env_matches(var: dict[str, Any], variable: str | None, literal: str | None) -> bool:
    name = _json.text(var.get("name"), limit=128) or ""
    if variable is not None:
        return name.lower() == variable.lower() and bool(name)
    said = _json.text(var.get("value")) or _json.text(var.get("default"))
    return "port" in name.lower() and said == literal


def plan(package: dict[str, Any], transport: str) -> LocalPort:
    """The run plan of a local-port package, or :class:`NotLocalPort` with the reason it cannot run."""
    declared = _json.text(_json.obj(package.get("transport")).get("url"), limit=2000)
    if declared is None:
        raise NotLocalPort(f"package serves {transport} on a local port but declares no URL")
    match = _URL.match(declared)
    if match is None:
        raise NotLocalPort(f"package serves {transport} at {declared[:80]!r}, not an http(s) URL template")
    port_text = match.group("port")
    if not port_text:
        raise NotLocalPort(f"package serves {transport} at {declared[:80]!r} without a port to choose")
    variable_match = _VARIABLE.match(port_text)
    variable = variable_match.group(1) if variable_match else None
    literal = None if variable else port_text
    if literal is not None and not literal.isdigit():
        raise NotLocalPort(f"package URL {declared[:80]!r} has a port that is not a number or a variable")
    rest = match.group("rest") or "/"
    if _PLACEHOLDER.search(rest):
        raise NotLocalPort(f"package URL {declared[:80]!r} has variables in its path (not supported)")
    chosen = copy.deepcopy(package)
    via = _set_sentinel(chosen, variable, literal)
    if via is None:
        said = f"{{{variable}}}" if variable else f"port {literal}"
        raise NotLocalPort(
            f"package serves {transport} on {said} but declares no argument or variable to set the port "
            "through (a fixed port is not run)"
        )
    # Always plain HTTP to 127.0.0.1: the host the template names is never connected to.
    return LocalPort(chosen, transport, f"http://127.0.0.1:{{port}}{rest}", declared, via)


def _set_sentinel(package: dict[str, Any], variable: str | None, literal: str | None) -> str | None:
    """Put :data:`PORT_SENTINEL` in the first argument or variable that carries the port; say which it was."""
    for key in ("packageArguments", "package_arguments", "runtimeArguments", "runtime_arguments"):
        for arg in _json.items(package.get(key)):
            if _arg_matches(arg, variable, literal):
                arg["value"] = PORT_SENTINEL
                arg.pop("variables", None)
                label = _json.text(arg.get("name"), limit=200) or _json.text(arg.get("valueHint"), limit=200)
                return f"argument {label}"
    for key in ("environmentVariables", "environment_variables"):
        for var in _json.items(package.get(key)):
            if _env_matches(var, variable, literal):
                var["value"] = PORT_SENTINEL
                var.pop("variables", None)
                return f"environment {_json.text(var.get('name'), limit=128)}"
    return None


def port_in(words: tuple[str, ...], env: dict[str, str]) -> bool:
    """Whether the sentinel reached the command or the environment (a user's own value may have replaced it)."""
    return any(PORT_SENTINEL in word for word in words) or any(PORT_SENTINEL in value for value in env.values())
