"""The one small interface every source of :class:`~scanner.models.ServerEntry` implements.

A source is a function ``(location, options) -> list[ServerEntry]``; :mod:`scanner.registry.loader` picks one in
a single table. ``Options`` carries what the policy needs: whether packages may run, where secrets come from,
the memory cap for packages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scanner.models import ServerEntry
from scanner.registry.memlimit import DEFAULT_MEMORY_LIMIT_MB


@dataclass(frozen=True)
class Options:
    """How entries are resolved: the safety policy as data."""

    run_packages: bool = False
    environ: Mapping[str, str] = field(default_factory=dict)
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
    updated_since: str | None = None
    max_pages: int = 1000
    max_page_bytes: int = 16 * 1024 * 1024
    max_file_bytes: int = 256 * 1024 * 1024
    timeout_s: float = 30.0


# A source reads its location (a URL, a path, or already parsed JSON) and yields entries.
Source = Callable[[Any, str, Options], list[ServerEntry]]
