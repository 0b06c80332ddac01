"""The one small interface every reader of a registry input implements, and the options it is given.

A reader takes an input already parsed from JSON (a saved registry response, a server.json, a list or a client
config), the name of where it came from, and :class:`Options`, and returns the entries it describes; anything it
cannot use becomes an entry's ``skip`` reason, and only an input it cannot read at all raises
:class:`~scanner.errors.InputError`. :data:`scanner.registry.loader.FORMATS` is the table of every input kind
with its reader; nothing else chooses one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scanner.confine import DEFAULT_MEMORY_LIMIT_MB
from scanner.models import ServerEntry

MIB = 1024 * 1024
DEFAULT_MAX_INPUT_MB = 128  # a 25 000-server registry fits twice over (bench/bench_registry_scale.py)


def size_text(limit: int) -> str:
    """A byte limit as a person reads it: ``64 MiB``, or ``1000 bytes`` below a MiB."""
    return f"{limit / MIB:g} MiB" if limit >= MIB else f"{limit} bytes"


@dataclass(frozen=True)
class Options:
    """How entries are resolved: the safety policy as data.

    ``run_packages`` and ``run_commands`` are the two opt-ins of the trust rule (:mod:`scanner.registry.trust`).
    ``max_input_bytes`` bounds everything read for one source: a file, all files of a directory together, or all
    pages of a registry API together (``max_page_bytes`` bounds one page as well).
    """

    run_packages: bool = False
    run_commands: bool = False
    environ: Mapping[str, str] = field(default_factory=dict)
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
    updated_since: str | None = None
    max_pages: int = 1000
    max_page_bytes: int = 16 * MIB
    max_input_bytes: int = DEFAULT_MAX_INPUT_MB * MIB
    timeout_s: float = 30.0


# A reader: (parsed document, where it came from, options) -> the entries it describes.
FileReader = Callable[[Any, str, Options], list[ServerEntry]]
