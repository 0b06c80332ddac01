"""``fathom try``: which tool a real model would call for a prompt, with which arguments, at what cost.

    request = TrialRequest(target=resolve("anthropic:claude-sonnet-4-5"), cases=(Case("prompt", "..."),), check=...)
    plan = prepare(request)          # nothing sent yet; plan.needs_consent for a remote endpoint
    report = run(plan)               # one turn per prompt and repetition; no tool is ever called
    render_text(report)

Modules: :mod:`.model` (``--model`` and ``--base-url`` to an endpoint), :mod:`.cases` (``--cases`` files),
:mod:`.validate` (arguments against ``inputSchema``), :mod:`.price` (``genai-prices``), :mod:`.run` (the trial),
:mod:`.types` (what a trial is asked and finds), :mod:`.render` (text, JSON, Markdown). The wire code lives beside
the provider views: ``scanner/providers/*_api.py``. See ``docs/try.md``.
"""

from __future__ import annotations

from scanner.providers.api import Limits
from scanner.trial.cases import Case, load_cases
from scanner.trial.model import Target, resolve
from scanner.trial.render import render_json, render_markdown, render_text
from scanner.trial.run import ToolsUnavailable, prepare, run
from scanner.trial.types import Plan, TrialReport, TrialRequest

__all__ = [
    "Case",
    "Limits",
    "Plan",
    "Target",
    "ToolsUnavailable",
    "TrialReport",
    "TrialRequest",
    "load_cases",
    "prepare",
    "render_json",
    "render_markdown",
    "render_text",
    "resolve",
    "run",
]
