"""Runners a scan needs but this machine lacks, said once before connecting (and in a dry run).

The resolver (:func:`scanner.registry.packages.resolve_packages`) already marks each entry whose runner is not
on ``PATH``: it is skipped with ``package["skip_outcome"] == "runner_missing"``, so it is recorded as
``runner_missing`` rather than blamed on the server. This module sums those up for one warning per runner.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from scanner.models import Outcome, ServerEntry
from scanner.packages.environment import OWN
from scanner.packages.settings import PackageSettings


def skip_outcome(entry: ServerEntry) -> Outcome:
    """The outcome to record for a skipped entry: ``delisted`` / ``deprecated`` (the registry said so),
    ``runner_missing``, ``needs_configuration`` or ``skipped``."""
    if entry.registry_status in ("deleted", "deprecated"):
        return Outcome.DELISTED if entry.registry_status == "deleted" else Outcome.DEPRECATED
    if entry.package:
        value = entry.package.get("skip_outcome")
        if isinstance(value, str) and value in Outcome.__members__.values():
            return Outcome(value)
    return Outcome.SKIPPED


def missing_runners(entries: Iterable[ServerEntry]) -> dict[str, int]:
    """Each missing runner and how many entries need it, e.g. ``{"uvx": 170}`` (empty when none is missing)."""
    counts: Counter[str] = Counter()
    for entry in entries:
        if skip_outcome(entry) is Outcome.RUNNER_MISSING and entry.package:
            counts[str(entry.package.get("runner"))] += 1
    return dict(sorted(counts.items()))


def warning_lines(entries: Iterable[ServerEntry], settings: PackageSettings | None = None) -> list[str]:
    """One line per missing runner, and per ``--pass-env`` name that is not set, for the start of a scan or a
    dry run."""
    entries = list(entries)
    lines = [
        f"{runner} is not on PATH: {count} {'entry' if count == 1 else 'entries'} will be recorded runner_missing"
        for runner, count in missing_runners(entries).items()
    ]
    if settings is not None and any(entry.package and not entry.skip for entry in entries):
        source = settings.source()
        for name in settings.pass_env:
            if name in OWN:
                lines.append(f"--pass-env {name}: Fathom sets {name} for every package itself; not passed")
            elif not source.get(name):
                lines.append(f"--pass-env {name} is not set: nothing passed")
    return lines
