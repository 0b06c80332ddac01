"""The per-scan metric registry: one table of the numbers each scan stores, that history and the report show.

A metric is declared once here with :func:`register`: its stable ``name`` (the key in ``scans.metrics`` and the
column of ``fathom history``; never reused for another meaning), a ``label`` and ``unit`` for people, a ``doc`` line,
and ``read``, which takes the scan's :class:`~scanner.models.ScanOutcome` and returns a number or None (not
measured for this scan: nothing is stored, not 0). The write path stores :func:`values` of every scan as one JSON
object (``{name: number}``); ``fathom history`` shows a column per registered metric and the report's server page a
row per metric, both iterating :data:`METRICS`. Adding a metric is one :func:`register` call in this file; nothing
else changes (docs/storage.md).

The registry is read at call time, never copied at import, so a test can add a metric with
``monkeypatch.setitem(METRICS, name, Metric(...))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scanner.models import ScanOutcome

Number = int | float


@dataclass(frozen=True)
class Metric:
    """One per-scan number: how it is named, shown and read from the scan's outcome."""

    name: str
    label: str
    unit: str
    doc: str
    read: Callable[[ScanOutcome], Number | None]


METRICS: dict[str, Metric] = {}
"""Every registered metric by name, in the order shown (registration order)."""


def register(metric: Metric) -> Metric:
    """Add ``metric`` to the registry; a name registered twice is a programming error."""
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name} is registered twice")
    METRICS[metric.name] = metric
    return metric


def _number(value: object) -> Number | None:
    """A finite int or float (not a bool) as it is, else None: what an outcome holds is not trusted to be one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def values(outcome: ScanOutcome) -> dict[str, Number]:
    """Every registered metric's value for this scan, by name; a metric that reads None (or anything but a finite
    number) is left out. ``read`` sees only what this process built (the outcome's fields), so it does not guard."""
    found: dict[str, Number] = {}
    for metric in METRICS.values():
        value = _number(metric.read(outcome))
        if value is not None:
            found[metric.name] = round(value, 1) if isinstance(value, float) else value
    return found


def stored(value: object) -> dict[str, Number]:
    """A stored ``scans.metrics`` value as ``{name: number}`` (NULL for scans written before migration 0006)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(name): number for name, raw in value.items() if (number := _number(raw)) is not None}


def _timing(phase: str) -> Callable[[ScanOutcome], Number | None]:
    def read(outcome: ScanOutcome) -> Number | None:
        return outcome.timings_ms.get(phase)

    return read


register(
    Metric(
        name="handshake_ms",
        label="Handshake",
        unit="ms",
        doc="Time from the connection being open to the end of the handshake (initialize or server/discover).",
        read=_timing("handshake"),
    )
)
register(
    Metric(
        name="list_ms",
        label="Tool listing",
        unit="ms",
        doc="Time to fetch every tools/list page after the handshake.",
        read=_timing("list"),
    )
)
register(
    Metric(
        name="list_pages",
        label="tools/list pages",
        unit="pages",
        doc="How many tools/list pages the server answered with (its pagination); only for a scan that listed.",
        read=lambda outcome: outcome.pages if outcome.ok else None,
    )
)
register(
    Metric(
        name="install_ms",
        label="Package install",
        unit="ms",
        doc="A registry package's install by its runner (npx, uvx) before the server starts: kept apart from the "
        "handshake, so a cold cache does not read as a slow server (scanner.packages.install).",
        read=_timing("install"),
    )
)
