"""A package's install step in a network of its own (issue 42): it runs the package's code (here an npm
``postinstall`` script), so, with slirp4netns and a registry off the host's loopback, it reaches the registry
through the route out and nothing that listens on the host's 127.0.0.1; it keeps the host's network, said in the
line before a scan, where the route could not reach the registry (no stack, a loopback index or proxy, only
loopback nameservers).

The registry is the tests' real one (:mod:`tests.packages.local_registry`), started on the machine's own address;
the package's ``postinstall`` dials a listener on the host's 127.0.0.1 and reports what it got to the registry
(``GET /npm/postinstall/<what>``): the registry's hits say the script ran and what it reached, and the listener's
own accept count says the same from the host's side.
"""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scanner import confine
from scanner.packages import PackageSettings
from scanner.packages.installnet import (
    NPM_DEFAULT_REGISTRY,
    hosts_on_loopback,
    index_settings,
    loopback_index,
    resolvers_on_loopback,
)
from scanner.packages.runners import network_line
from tests.confine.test_confinement import host_address
from tests.packages.local_registry import LocalRegistry
from tests.packages.test_package_runs import environ, npm_package, resolve, run, tool_names

HOSTS = "127.0.0.1 localhost\n::1 ip6-localhost\n127.0.1.1 builder registry.corp # a name on loopback\n"


@pytest.mark.parametrize(
    ("runner", "env", "found"),
    [
        ("npx", {}, None),  # npm's default registry, https://registry.npmjs.org/
        ("npx", {"npm_config_registry": "http://127.0.0.1:4873/"}, ("npm_config_registry", "127.0.0.1")),
        ("npx", {"NPM_CONFIG_REGISTRY": "http://localhost:4873/"}, ("NPM_CONFIG_REGISTRY", "localhost")),
        ("npx", {"npm_config_@corp:registry": "http://[::1]:4873/"}, ("npm_config_@corp:registry", "::1")),
        ("npx", {"npm_config_registry": "https://registry.corp/npm/"}, ("npm_config_registry", "registry.corp")),
        ("npx", {"npm_config_registry": "http://127.9.8.7/"}, ("npm_config_registry", "127.9.8.7")),
        ("npx", {"npm_config_registry": "http://0.0.0.0:4873/"}, ("npm_config_registry", "0.0.0.0")),
        ("npx", {"npm_config_registry": "http://[::ffff:127.0.0.1]/"}, ("npm_config_registry", "::ffff:127.0.0.1")),
        ("npx", {"npm_config_registry": "http://npm.localhost/"}, ("npm_config_registry", "npm.localhost")),
        ("npx", {"npm_config_registry": "https://192.0.2.7/"}, None),
        ("npx", {"npm_config_registry": "https://registry.npmjs.org/"}, None),
        ("npx", {"https_proxy": "http://127.0.0.1:3128"}, ("https_proxy", "127.0.0.1")),
        ("npx", {"npm_config_proxy": "http://localhost:3128"}, ("npm_config_proxy", "localhost")),
        ("npx", {"UV_INDEX_URL": "http://127.0.0.1/simple/"}, None),  # not npm's
        ("uvx", {}, None),  # PyPI
        ("uvx", {"UV_INDEX_URL": "http://127.0.0.1:8080/simple/"}, ("UV_INDEX_URL", "127.0.0.1")),
        ("uvx", {"UV_DEFAULT_INDEX": "http://localhost/simple"}, ("UV_DEFAULT_INDEX", "localhost")),
        ("uvx", {"UV_INDEX": "pypi=https://pypi.org/simple corp=http://[::1]/simple"}, ("UV_INDEX", "::1")),
        ("uvx", {"PIP_INDEX_URL": "http://127.0.0.1/simple"}, ("PIP_INDEX_URL", "127.0.0.1")),
        (
            "uvx",
            {"UV_EXTRA_INDEX_URL": "https://a.example/simple http://127.0.0.2/s"},
            ("UV_EXTRA_INDEX_URL", "127.0.0.2"),
        ),
        ("uvx", {"PIP_EXTRA_INDEX_URL": "http://localhost/s"}, ("PIP_EXTRA_INDEX_URL", "localhost")),
        ("uvx", {"UV_FIND_LINKS": "/srv/wheels,http://127.0.0.1/links/"}, ("UV_FIND_LINKS", "127.0.0.1")),
        ("uvx", {"PIP_FIND_LINKS": "file:///srv/wheels /srv/other"}, None),  # read, not dialled
        ("uvx", {"ALL_PROXY": "socks5://127.0.0.1:1080"}, ("ALL_PROXY", "127.0.0.1")),
        ("uvx", {"UV_INDEX_URL": "https://pypi.example/simple", "npm_config_registry": "http://127.0.0.1/"}, None),
    ],
)
def test_which_index_is_on_the_hosts_loopback(runner, env, found):
    """The runner's index and proxy settings, read as the runner reads them: any on the host's loopback (by
    name, address, or a name the hosts file maps there) keeps the install on the host's network."""
    assert loopback_index(runner, env, hosts=HOSTS) == found


def test_the_default_registry_and_the_hosts_file():
    assert index_settings("npx", {}) == [("npm's default registry", NPM_DEFAULT_REGISTRY)]
    assert hosts_on_loopback(HOSTS) == {"localhost", "ip6-localhost", "builder", "registry.corp"}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("nameserver 127.0.0.53\noptions edns0 trust-ad\n", ["127.0.0.53"]),  # systemd-resolved
        ("nameserver 127.0.0.11\n", ["127.0.0.11"]),  # docker's embedded DNS
        ("# nothing\nsearch corp\n", ["127.0.0.1 (none named)"]),  # glibc then asks 127.0.0.1
        ("nameserver 127.0.0.53\nnameserver 10.0.0.2\n", []),  # one reachable through the route out
        ("nameserver 10.255.255.53\n", []),
        ("nameserver ::1\n", ["::1"]),
    ],
)
def test_loopback_nameservers_keep_the_install_on_the_hosts_network(text, kept):
    assert resolvers_on_loopback(text) == kept


# --- the install step, for real ----------------------------------------------------------------------------

# The postinstall: dial the host's 127.0.0.1:PORT, then tell the registry what it got.
POSTINSTALL = (
    "node -e '"
    'const net = require("net"), http = require("http");'
    'const report = (what) => http.get(process.env.npm_config_registry + "postinstall/" + what, (res) => res.resume())'
    '.on("error", () => {});'
    'const sock = net.connect(PORT, "127.0.0.1");'
    'sock.setTimeout(10000, () => { sock.destroy(); report("timeout"); });'
    'sock.on("connect", () => { sock.end(); report("connected"); });'
    'sock.on("error", (e) => report(e.code || "error"));'
    "'"
)


class Listener:
    """What listens on the host's 127.0.0.1 (Fathom's database, a sibling's server): counts who connected."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    held = Listener()
    yield held
    held.close()


def _registry(address: str, listener: Listener) -> LocalRegistry:
    return LocalRegistry(address=address, scripts={"postinstall": POSTINSTALL.replace("PORT", str(listener.port))})


def _reports(registry: LocalRegistry) -> dict[str, int]:
    return {path.rsplit("/", 1)[1]: count for path, count in registry.hits.items() if "/postinstall/" in path}


needs_npx = pytest.mark.skipif(not shutil.which("npx"), reason="npx not installed")


@needs_npx
@pytest.mark.parametrize("who", ["leased-user", "own-user"])
def test_with_the_stack_an_install_script_reaches_the_registry_not_the_hosts_loopback(
    listener, tmp_path: Path, monkeypatch, who: str
):
    """With slirp4netns and the registry on the machine's own address, the install step runs in a network of
    its own: its postinstall is refused by the host's 127.0.0.1 (and reaches the registry to say so), the install
    succeeds, the package scans ``ok``, and the line before the scan names the install step among what gets a
    network of its own. Run as root, as a leased user of its own and as Fathom's own user (as when it is not
    root)."""
    if who == "own-user":
        monkeypatch.setattr(confine, "enabled", lambda: False)
    elif not confine.enabled():
        pytest.skip("a user of its own per child needs root on Linux")
    holds, why = confine.outbound()
    if not holds:
        pytest.skip(f"no user-mode network stack here: {why}")
    if resolvers_on_loopback():
        pytest.skip(f"every nameserver here is on loopback: {resolvers_on_loopback()}")
    registry = _registry(host_address(), listener)
    try:
        env = environ(registry)
        entry = resolve(npm_package("1.0.0"), env)
        line = network_line([entry], environ=env)
        assert line is not None and line.startswith(
            "a package's install step and run (stdio or on a local port): a network of its own, outbound through "
            "slirp4netns, never the host's loopback"
        ), line
        outcome = run(entry, PackageSettings(cache_dir=tmp_path / "cache", environ=env))
        assert tool_names(outcome) == ["version_1_0_0"]
        assert outcome.timings_ms["install"] > 0
        assert _reports(registry) == {"ECONNREFUSED": 1}  # the script ran, and the host's loopback refused it
        assert listener.accepted == 0
    finally:
        registry.close()


@needs_npx
@pytest.mark.parametrize("why", ["no-stack", "loopback-registry"])
def test_an_install_that_keeps_the_hosts_network_is_said(listener, tmp_path: Path, monkeypatch, why: str):
    """Without a stack (``FATHOM_NETWORK_STACK=none``), or with the registry on the host's loopback (which a
    network of its own could not reach), the same install keeps the host's network: its postinstall reaches the
    host's 127.0.0.1, and the line before the scan says the install step keeps this machine's network, and why.
    The package's run still gets its network of its own and scans ``ok``."""
    if not confine.own_network()[0]:
        pytest.skip(f"no network namespace here: {confine.own_network()[1]}")
    if why == "no-stack":
        monkeypatch.setenv(confine.STACK_ENV, "none")
        address, said = host_address(), "npx: no route out"
    else:
        if not confine.outbound()[0]:
            pytest.skip(f"no user-mode network stack here: {confine.outbound()[1]}")
        address, said = "127.0.0.1", "npx: npm_config_registry names 127.0.0.1, on this machine's loopback"
    registry = _registry(address, listener)
    try:
        env = environ(registry)
        entry = resolve(npm_package("1.0.0"), env)
        line = network_line([entry], environ=env)
        assert line is not None and line.startswith("a package's run (stdio or on a local port): a network of its own")
        assert (
            f"; a package's install step keeps this machine's network, reaching what listens on its loopback ({said})"
            in line
        )
        outcome = run(entry, PackageSettings(cache_dir=tmp_path / "cache", environ=env))
        assert tool_names(outcome) == ["version_1_0_0"]
        assert _reports(registry) == {"connected": 1}
        assert listener.accepted == 1
    finally:
        registry.close()
