"""Reports: the published site (``fathom report``: ``build``, ``data``, ``html``, ``views``, the exports) and the
query answers (``queries``, ``tabular``: ``fathom runs|servers|history|findings|diff``). ``fathom check``'s own
renderers live with it, in :mod:`scanner.check`.

``build_report`` is imported lazily, so importing a module of this package (``fathom check`` reads
``report.text``) never loads Jinja or the store.
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
