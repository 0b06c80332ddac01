"""Running registry packages (npm, PyPI, OCI) on a nightly scan: the part after resolution.

:mod:`scanner.registry.packages` decides *what* runs (exactly the declared package at its version, or a skip
with the reason). This package decides *how* it runs and what its failure means:

* :mod:`~scanner.packages.settings`: the persistent cache, the per-entry disk budget, ``--pass-env``;
* :mod:`~scanner.packages.environment`: the child's environment (throwaway HOME, the shared cache, installer
  settings from a documented allow-list, update/funding/audit chatter off);
* :mod:`~scanner.packages.runners`: which runners (npx, uvx, docker) are missing, said once before a scan;
* :mod:`~scanner.packages.sandbox`: one package's scan, under its disk budget;
* :mod:`~scanner.packages.diagnose`: why a package did not answer (``package_not_found``, ``install_failed``,
  ``needs_configuration``, ``crashed``, ...), in a message normalised to read the same every night.

See the "Packages" part of ``docs/registry.md``.
"""

from scanner.packages.diagnose import classify, normalise
from scanner.packages.runners import missing_runners, skip_outcome
from scanner.packages.sandbox import run_package
from scanner.packages.settings import PackageSettings, default_cache_dir

__all__ = [
    "PackageSettings",
    "classify",
    "default_cache_dir",
    "missing_runners",
    "normalise",
    "run_package",
    "skip_outcome",
]
