"""The environment a package runs in: scrubbed, with a throwaway HOME, the shared cache and the installer's own
settings.

``entry.env`` (from the resolver) holds only ``PATH``, ``LANG`` and the package's declared variables. To that
this module adds, in this order (a later step never overrides an earlier one's names except where said):

1. ``HOME`` and ``TMPDIR``: the entry's own temporary folder (under the cache's ``homes/``), thrown away
   afterwards;
2. installer settings from :data:`INSTALLER_SETTINGS` (CA bundles, proxies, registry and index settings of
   npm, uv and pip), taken from Fathom's environment when set there. A value holding credentials in a URL
   (``https://user:token@proxy``) is a secret and is left out: pass it with ``--pass-env NAME`` if the
   installer needs it, knowing the package sees it too;
3. every ``--pass-env NAME`` set in Fathom's environment, as is (except ``HOME``, ``TMPDIR`` and ``PATH``);
4. the runner's cache and quiet settings (``npm_config_cache``, ``UV_CACHE_DIR`` in the package@version's own
   cache folder, see :mod:`scanner.packages.cache`; update notices, funding and audit messages off; uv never
   downloads an interpreter, since the interpreters' folder is read-only to packages), which always win.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from scanner.models import ServerEntry
from scanner.packages.cache import PackageCache
from scanner.packages.settings import PackageSettings

# Installer settings a package's runner may need to reach its registry from this network. Names only; every
# value is read from Fathom's own environment. Lower-case proxy names are the curl/npm convention.
INSTALLER_SETTINGS: tuple[str, ...] = (
    # CA bundles and TLS
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    # proxies
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    # npm (registry, CA, proxy, TLS; never auth tokens)
    "npm_config_registry",
    "npm_config_cafile",
    "npm_config_ca",
    "npm_config_strict_ssl",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "npm_config_noproxy",
    "npm_config_fetch_retries",
    "npm_config_fetch_timeout",
    # uv
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_INDEX_STRATEGY",
    "UV_NATIVE_TLS",
    "UV_INSECURE_HOST",
    "UV_HTTP_TIMEOUT",
    "UV_PYTHON_INSTALL_MIRROR",
    "UV_PYTHON_DOWNLOADS",
    "UV_OFFLINE",
    # pip (uv reads some of these too)
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_CERT",
    "PIP_FIND_LINKS",
)

# Names Fathom sets for every package; ``--pass-env`` cannot replace them (the throwaway HOME is the point).
OWN = frozenset({"HOME", "TMPDIR", "PATH"})

_CREDENTIALS_IN_URL = re.compile(r"://[^/@\s]+@")

# The runner's own settings, keyed by runner; "{cache}" (the whole cache), "{pkg}" (the package@version's own
# folder) and "{home}" are filled in.
_RUNNER_SETTINGS: dict[str, dict[str, str]] = {
    "npm": {
        "npm_config_cache": "{pkg}/npm",
        "npm_config_logs_dir": "{home}/.npm-logs",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "npm_config_yes": "true",
        "NO_UPDATE_NOTIFIER": "1",
    },
    "pypi": {
        "UV_CACHE_DIR": "{pkg}/uv",
        "UV_PYTHON_INSTALL_DIR": "{cache}/uv-python",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_TOOL_DIR": "{home}/.uv-tools",
        "UV_NO_PROGRESS": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    },
    "oci": {},
}


def installer_settings(source: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The allow-listed installer settings set in ``source``, and the names left out for holding credentials."""
    passed: dict[str, str] = {}
    left_out: list[str] = []
    for name in INSTALLER_SETTINGS:
        value = source.get(name)
        if not value or "\0" in value:
            continue
        if _CREDENTIALS_IN_URL.search(value):
            left_out.append(name)
            continue
        passed[name] = value
    return passed, left_out


def package_env(entry: ServerEntry, home: Path, settings: PackageSettings) -> dict[str, str]:
    """The exact environment of ``entry``'s process (see the module docstring for what wins)."""
    source = settings.source()
    kind = str((entry.package or {}).get("registryType") or "")
    cache = PackageCache(settings.cache())
    env = dict(entry.env)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    env["TMPDIR"] = str(tmp)
    passed, _ = installer_settings(source)
    for name, value in passed.items():
        env.setdefault(name, value)
    for name in settings.pass_env:
        if name in OWN:
            continue
        given = source.get(name)
        if given and "\0" not in given:
            env[name] = given
    for name, template in _RUNNER_SETTINGS.get(kind, {}).items():
        env[name] = template.format(cache=cache.root, pkg=cache.package_dir(entry), home=home)
    if kind == "npm" and (entry.package or {}).get("pinned"):
        # A pinned version never changes: take it from the cache without asking the registry again.
        env["npm_config_prefer_offline"] = "true"
    return env
