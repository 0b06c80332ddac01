"""Reports: the published site (``fathom report``) and the ``fathom check`` renderers.

``build_report`` is imported lazily, so ``fathom check`` (which uses only the ``check_*`` modules) never loads
Jinja or the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scanner.report.build import ReportResult, build_report

__all__ = ["ReportResult", "build_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from scanner.report import build

        return getattr(build, name)
    raise AttributeError(name)
