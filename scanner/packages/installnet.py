"""Whether a package's install step gets a network of its own (issue 42).

The install step (:mod:`scanner.packages.install`: ``npx -y -p pkg@ver -c true``, ``uvx --from pkg==ver python -c
pass``) runs the package's code (npm's lifecycle scripts, a Python sdist's build), so it is started like the
package's run: in a network namespace of its own with the route out through slirp4netns
(:func:`scanner.confine.outbound`), never to the host's loopback. It keeps the host's network, and the line before
a scan says so (:func:`scanner.packages.runners.network_line`), where that route could not reach the registry:

* no route out (no slirp4netns on ``PATH``, ``FATHOM_NETWORK_STACK=none``, no network namespace);
* the runner's index or proxy on this machine's loopback (``localhost``, ``*.localhost``, 127.0.0.0/8, ``::1``,
  the unspecified address, a name ``/etc/hosts`` maps to one of them): npm's ``npm_config_registry`` (any case,
  scoped ``npm_config_@scope:registry`` too; else https://registry.npmjs.org/), uv's ``UV_INDEX_URL``,
  ``UV_DEFAULT_INDEX``, ``UV_INDEX``, ``UV_EXTRA_INDEX_URL``, ``UV_FIND_LINKS`` and pip's ``PIP_INDEX_URL``,
  ``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS`` when they are URLs (https://docs.astral.sh/uv/reference/environment/),
  and the proxies both read (``HTTP(S)_PROXY``, ``ALL_PROXY`` any case, ``npm_config_proxy``,
  ``npm_config_https_proxy``). No ``.npmrc`` is read: the install's HOME is a throwaway one, and npm's global and
  built-in config files are not looked at;
* every nameserver of ``/etc/resolv.conf`` on the host's loopback (systemd-resolved's 127.0.0.53, Docker's
  127.0.0.11; none named means 127.0.0.1): slirp4netns runs with ``--disable-dns``, so the child asks those
  servers itself, and in its own network they are not there.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from scanner import confine

NPM_DEFAULT_REGISTRY = "https://registry.npmjs.org/"
_UV_INDEXES = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
)
_PROXIES = ("http_proxy", "https_proxy", "all_proxy")
_NPM_PROXIES = ("npm_config_proxy", "npm_config_https_proxy")
_MAX_FILE = 1 << 20


def _is_loopback_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified  # a connect to 0.0.0.0 or :: reaches this machine


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(_MAX_FILE)
    except OSError:
        return ""


def hosts_on_loopback(text: str) -> set[str]:
    """The names a hosts file (``/etc/hosts``'s text) maps to a loopback address, lower-cased."""
    names: set[str] = set()
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) > 1 and _is_loopback_address(words[0]):
            names.update(word.lower() for word in words[1:])
    return names


def on_loopback(url: str, loopback_names: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The host of ``url`` (http, https, a proxy's socks) when it is on this machine's loopback, else None
    (also for a path or a ``file:`` URL: read, not dialled)."""
    text = url.strip()
    if "://" not in text:
        return None
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").rstrip(".").lower()
    except ValueError:
        return None
    if parts.scheme.lower() == "file" or not host:
        return None
    if host == "localhost" or host.endswith(".localhost") or host in loopback_names or _is_loopback_address(host):
        return host
    return None


def _urls(value: str) -> Iterator[str]:
    """The URLs in an index setting: space- or comma-separated, each maybe ``name=URL`` (uv's ``UV_INDEX``)."""
    for word in value.replace(",", " ").split():
        head, sep, tail = word.partition("=")
        yield tail if sep and "://" not in head else word


def index_settings(runner: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The (name, URL) pairs ``runner`` (``npx``, ``uvx``) reaches its index and proxy through, from ``env``."""
    folded = {name.lower(): (name, value) for name, value in env.items()}
    found: list[tuple[str, str]] = []
    if runner == "npx":
        registries = [
            (name, value)
            for lower, (name, value) in folded.items()
            if lower.startswith("npm_config_") and lower.endswith("registry") and value.strip()
        ]
        found += registries or [("npm's default registry", NPM_DEFAULT_REGISTRY)]
        found += [folded[name] for name in _NPM_PROXIES if name in folded]
    elif runner == "uvx":
        found += [(name, url) for name in _UV_INDEXES if name in env for url in _urls(env[name])]
    found += [folded[name] for name in _PROXIES if name in folded]
    return found


def loopback_index(runner: str, env: Mapping[str, str], hosts: str | None = None) -> tuple[str, str] | None:
    """The first setting of ``runner``'s index or proxy in ``env`` on this machine's loopback, as (its name, its
    host), or None. ``hosts``: a hosts file's text (None: ``/etc/hosts``)."""
    names = hosts_on_loopback(_read("/etc/hosts") if hosts is None else hosts)
    for name, url in index_settings(runner, env):
        host = on_loopback(url, names)
        if host is not None:
            return name, host
    return None


def resolvers_on_loopback(text: str | None = None) -> list[str]:
    """The nameservers of a ``resolv.conf`` (``text``; None: ``/etc/resolv.conf``) when every one is on the
    host's loopback (none named: glibc asks 127.0.0.1), else an empty list."""
    servers = [
        words[1]
        for line in (_read("/etc/resolv.conf") if text is None else text).splitlines()
        if len(words := line.split("#", 1)[0].split()) > 1 and words[0] == "nameserver"
    ]
    if not servers:
        return ["127.0.0.1 (none named)"]
    return servers if all(_is_loopback_address(server) for server in servers) else []


def install_network(runner: str, env: Mapping[str, str]) -> tuple[bool, str]:
    """Whether ``runner``'s install step, started with ``env``, gets a network of its own with the route out
    (True, ""), or keeps the host's network (False, and why, one clause)."""
    if not confine.outbound()[0]:
        return False, "no route out"
    found = loopback_index(runner, env)
    if found is not None:
        return False, f"{found[0]} names {found[1]}, on this machine's loopback"
    servers = resolvers_on_loopback()
    if servers:
        return False, f"every nameserver of /etc/resolv.conf is on this machine's loopback ({', '.join(servers)})"
    return True, ""


def runner_of(command: tuple[str, ...]) -> str:
    """The runner's name of an install step's command (``npx``, ``uvx``)."""
    return os.path.basename(command[0]) if command else ""
