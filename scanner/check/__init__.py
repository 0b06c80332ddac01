"""``fathom check``: one tool list in CI, in one room.

The front: :func:`~scanner.check.gates.run_gate` (measure, baseline, gates and badge in one call, what the
command does), :func:`~scanner.check.run.run_check` (get and measure one list) and the values they pass around
(:mod:`scanner.check.result`). Behind it, one module per part, each importing only the floor below:

- ``result``: :class:`CheckRequest`, :class:`CheckResult` and the smaller values they hold (the floor every other
  module stands on);
- ``run``: get the list (a file, a server, a stored list) and measure it (:mod:`scanner.measure.toollist`);
  ``toolsets`` reads a tool list file, ``next_step`` says what to try when a server could not be listed;
- ``baseline``, ``gates``, ``config`` (``[tool.fathom]``/``fathom.toml``), ``badge``;
- the renderers: ``render_text``, ``render_markdown``, ``render_json``, ``render_sarif`` (with ``locate``: where a
  tool sits in the file), ``groups`` (one row per rule over many tools, shared with the site), ``write``
  (``--write FORMAT=PATH``);
- ``ci``: the GitHub Action's and the pre-commit hook's entry point (``python -m scanner.check.ci``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scanner.check.gates import GateRequest, Gates, run_gate
    from scanner.check.result import CheckRequest, CheckResult
    from scanner.check.run import run_check

# Loaded on first use: the site imports ``groups`` and ``badge`` alone, without the gates and the MCP client.
_HOMES = {
    "CheckRequest": "result",
    "CheckResult": "result",
    "GateRequest": "gates",
    "Gates": "gates",
    "run_check": "run",
    "run_gate": "gates",
}
__all__ = ["CheckRequest", "CheckResult", "GateRequest", "Gates", "run_check", "run_gate"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f"scanner.check.{_HOMES[name]}"), name)
    raise AttributeError(name)
