"""How packages run on this machine: where the shared cache lives, the disk budget, extra variables passed."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DISK_LIMIT_MB = 4096
DEFAULT_CACHE_MAX_MB = 20480


ROOT_CACHE_DIR = Path("/var/cache/fathom")
"""The default cache of a root Fathom on Linux: each package runs as a user of its own there
(:mod:`scanner.confine.users`), which cannot reach ``/root`` (0700), so root's ``~/.cache`` would fail every
package."""


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/fathom``; else ``/var/cache/fathom`` for root on Linux (the children's users must reach
    it), or ``~/.cache/fathom`` (the XDG default)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):
        if sys.platform.startswith("linux") and os.geteuid() == 0:
            return ROOT_CACHE_DIR
        base = str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "fathom"


@dataclass(frozen=True)
class PackageSettings:
    """``--cache-dir``, ``--disk-limit-mb``, ``--cache-max-mb``, ``--retry-too-large`` and ``--pass-env`` as data.

    ``cache_dir`` None means :func:`default_cache_dir`. ``cache_max_mb`` is the ceiling the whole cache is kept
    under after a scan; ``retry_too_large`` installs again a package@version remembered ``too_large``.
    ``pass_env`` names variables of this process's environment handed to every package as they are (the user's
    explicit choice, like a proxy password).
    ``environ`` is where installer settings and ``pass_env`` values are read (None: this process's).
    """

    cache_dir: Path | None = None
    disk_limit_mb: int = DEFAULT_DISK_LIMIT_MB
    cache_max_mb: int = DEFAULT_CACHE_MAX_MB
    retry_too_large: bool = False
    pass_env: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = None

    def source(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def cache(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_cache_dir(self.source())
