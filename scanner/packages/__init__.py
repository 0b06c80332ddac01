"""Running registry packages (npm, PyPI, OCI) on a nightly scan: the part after resolution.

:mod:`scanner.registry.packages` decides *what* runs (exactly the declared package at its version, or a skip
with the reason). This package decides *how* it runs and what its failure means:

* :mod:`~scanner.packages.settings`: the cache folder, the per-entry disk budget, the cache's ceiling,
  ``--retry-too-large``, ``--pass-env``;
* :mod:`~scanner.packages.cache`: one folder per package@version, what Fathom remembers of it (a ``too_large``
  verdict, the Python chosen, the seal of its install), sizes as ``du`` counts them, orphans and the ceiling;
* :mod:`~scanner.packages.housekeeping`: the cache kept in bounds before and after a scan;
* :mod:`~scanner.packages.environment`: the child's environment (throwaway HOME, its own cache folder,
  installer settings from a documented allow-list, update/funding/audit chatter off);
* :mod:`~scanner.packages.runners`: which runners (npx, uvx, docker) are missing or whose daemon does not
  answer, said once before a scan;
* :mod:`~scanner.packages.install`: the install, timed on its own (``install_ms``);
* :mod:`~scanner.packages.interpreters`: the Python a PyPI package runs on, and the runners' versions;
* :mod:`~scanner.packages.sandbox`: one package's scan, under its disk budget;
* :mod:`~scanner.packages.diagnose`: why a package did not answer (``package_not_found``, ``install_failed``,
  ``needs_configuration``, ``memory_limit``, ``refused``, ``crashed``, ...), from the evidence in its output,
  in a message normalised to read the same every night;
* :mod:`~scanner.packages.checkrun`: ``fathom check -- npx ...`` run and classified as a scan does;
* :mod:`~scanner.packages.commands`: a ``--run-commands`` command, run apart from the others.

How every package and command is confined (its own user when Fathom runs as root, its own namespaces, the
memory cap and Landlock, nothing outliving Fathom) is :mod:`scanner.confine`'s; the MCP client's stdio transport
starts every child through it too.

The names below are loaded on first use, so importing one submodule does not load the sandbox and, through it,
the MCP client.

See the "Packages" part of ``docs/registry.md``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scanner.packages.diagnose import classify, normalise
    from scanner.packages.runners import missing_runners, skip_outcome
    from scanner.packages.sandbox import run_package
    from scanner.packages.settings import PackageSettings, default_cache_dir

_HOMES = {
    "PackageSettings": "settings",
    "classify": "diagnose",
    "default_cache_dir": "settings",
    "missing_runners": "runners",
    "normalise": "diagnose",
    "run_package": "sandbox",
    "skip_outcome": "runners",
}
__all__ = [
    "PackageSettings",
    "classify",
    "default_cache_dir",
    "missing_runners",
    "normalise",
    "run_package",
    "skip_outcome",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f"scanner.packages.{_HOMES[name]}"), name)
    raise AttributeError(name)
