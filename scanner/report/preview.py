"""Preview rules out of sight (rules.md, status): what a query, a page or an export shows of preview findings.

A preview rule's findings are stored like any other, but every command and page shows and counts the stable
ones only, unless ``--preview`` (or ``preview = true`` in the config file) asks for them; then each is marked
as ``fathom check`` marks it: its ``status`` (``preview``) and its rule's measured precision. Asking for one rule
by code (``fathom findings --rule MCP807``) shows that rule's findings, marked.

The switch is one context variable set by the command for the length of its work (:func:`showing`), so the site
builder's many readers need no extra argument; a reader that answers one query takes ``preview`` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from scanner.rules.registry import is_preview, status_of

_SHOW: ContextVar[bool] = ContextVar("fathom_show_preview", default=False)
# Statuses whose stored findings stay out of sight unless asked for: preview, and a retired rule's (stored before
# the catalogue that retired it, until `fathom rescore` removes them).
_OUT_OF_SIGHT = ("preview", "removed")


class _Coded(Protocol):
    @property
    def code(self) -> Any: ...


C = TypeVar("C", bound=_Coded)


@contextmanager
def showing(preview: bool) -> Iterator[None]:
    """Within the block, preview findings are shown (marked) when ``preview``, else left out."""
    token = _SHOW.set(bool(preview))
    try:
        yield
    finally:
        _SHOW.reset(token)


def shown_preview() -> bool:
    """Whether the command at work asked for preview findings."""
    return _SHOW.get()


def visible(code: object, preview: bool | None = None, asked: str | None = None) -> bool:
    """Whether a finding of rule ``code`` is shown: a stable one always; a preview (or retired) one when preview
    findings are asked for (``preview``, else the command's switch) or its rule is ``asked`` for by code."""
    text = str(code)
    if status_of(text) not in _OUT_OF_SIGHT:
        return True
    return (shown_preview() if preview is None else preview) or (asked is not None and text == asked)


def only_visible(found: Iterable[C], preview: bool | None = None, asked: str | None = None) -> list[C]:
    """The items of ``found`` (anything with a ``code``) that :func:`visible` shows, in order."""
    return [item for item in found if visible(item.code, preview, asked)]


def mark(code: object) -> dict[str, Any]:
    """What a shown finding carries, as ``check``'s JSON does: its rule's ``status`` and, for a preview rule, the
    measured ``precision`` (0-1, None when not measured) and the same in words (``precision_text``)."""
    from scanner.rules.catalogue import precision_label, rule_precision

    text = str(code)
    status = status_of(text)
    if status != "preview":
        return {"status": status}
    return {"status": status, "precision": rule_precision(text), "precision_text": precision_label(text)}


def tag(code: object) -> str:
    """`` [preview: 0 of 6 labelled findings right ...]`` after a preview finding's text; empty for a stable one."""
    from scanner.rules.catalogue import precision_label

    text = str(code)
    if status_of(text) == "removed":
        return " [removed: a retired rule]"
    return f" [preview: {precision_label(text)}]" if is_preview(text) else ""
