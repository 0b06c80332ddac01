"""Where a finding stands in a tools file: the line of its JSON Pointer, and the pointer from the file's root.

A code-scanning alert needs a line to stand on. The tools file is parsed a second time with positions: each
value is skipped with the standard decoder (:meth:`json.JSONDecoder.raw_decode`), so only the path down to the
tools array (``/``, ``/tools`` or ``/result/tools``, the shapes :func:`scanner.check.toolsets.extract_tools` accepts)
is walked by hand. Anything unexpected gives ``None`` and the caller falls back to line 1: a location is never
worth an error.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from pathlib import Path

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


@dataclass(frozen=True)
class ToolLines:
    """A tools file's text, the tools array's JSON Pointer (``""`` for a top-level array) and where each tool
    starts; :meth:`line` finds the line of a pointer inside a tool."""

    text: str
    pointer: str
    starts: tuple[int, ...]
    newlines: tuple[int, ...]

    def _line_at(self, offset: int) -> int:
        return bisect.bisect_right(self.newlines, offset) + 1

    def line(self, index: int | None, inner: str | None = None) -> int:
        """The line of ``inner`` (a JSON Pointer inside tool ``index``), or of the deepest part of it that is
        found, or of the tool itself; 1 when the tool is unknown."""
        if index is None or not 0 <= index < len(self.starts):
            return 1
        at = self.starts[index]
        try:
            for token in _tokens(inner or ""):
                if self.text.startswith("{", at):
                    found = _value(_members(self.text, at) or [], token)
                elif self.text.startswith("[", at) and token.isdigit():
                    elements = _elements(self.text, at) or []
                    found = elements[int(token)] if int(token) < len(elements) else None
                else:
                    found = None
                if found is None:
                    break
                at = found
        except (ValueError, RecursionError):
            pass
        return self._line_at(at)

    def tool_pointer(self, index: int | None, inner: str | None) -> str:
        """The finding's pointer in the file: ``/tools/3`` + its pointer inside the tool."""
        if index is None:
            return self.pointer or "/"
        return f"{self.pointer}/{index}{inner or ''}"


def _tokens(pointer: str) -> list[str]:
    """The reference tokens of a JSON Pointer (RFC 6901: ``~1`` is ``/``, ``~0`` is ``~``)."""
    if not pointer.startswith("/"):
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _members(text: str, at: int) -> list[tuple[str, int]] | None:
    """The keys of the object starting at ``at`` and where each value starts."""
    at = _skip(text, at + 1)
    out: list[tuple[str, int]] = []
    if text.startswith("}", at):
        return out
    while True:
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            return None
        start = _skip(text, at + 1)
        out.append((key, start))
        _, at = _DECODER.raw_decode(text, start)
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif text.startswith("}", at):
            return out
        else:
            return None


def _elements(text: str, at: int) -> list[int] | None:
    """Where each element of the array starting at ``at`` starts."""
    at = _skip(text, at + 1)
    out: list[int] = []
    if text.startswith("]", at):
        return out
    while True:
        out.append(at)
        _, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif text.startswith("]", at):
            return out
        else:
            return None


def _value(members: list[tuple[str, int]], key: str) -> int | None:
    found = [start for name, start in members if name == key]
    return found[-1] if found else None  # a repeated key: the parser keeps the last one, so do we


def locate_tools(text: str) -> ToolLines | None:
    """The tools array's pointer and each tool's line in ``text`` (a tools file's content), or None."""
    try:
        at = _skip(text, 1 if text.startswith("\ufeff") else 0)
        pointer = ""
        if text.startswith("{", at):
            members = _members(text, at)
            if members is None:
                return None
            start = _value(members, "tools")
            pointer = "/tools"
            if start is None:
                result = _value(members, "result")
                if result is None or not text.startswith("{", result):
                    return None
                inner = _members(text, result)
                start = _value(inner or [], "tools")
                pointer = "/result/tools"
                if start is None:
                    return None
            at = start
        if not text.startswith("[", at):
            return None
        starts = _elements(text, at)
    except (ValueError, RecursionError):
        return None
    if starts is None:
        return None
    newlines = tuple(offset for offset, char in enumerate(text) if char == "\n")
    return ToolLines(text=text, pointer=pointer, starts=tuple(starts), newlines=newlines)


def locate_file(path: str | Path) -> ToolLines | None:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return locate_tools(text)


def repo_root(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` holding ``.git`` (a folder, or a file for a worktree)."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def relative_uri(path: str | Path, cwd: Path | None = None) -> tuple[str, bool]:
    """``path`` as a URI relative to the repository root (or the current folder when there is no repository),
    and True; or an absolute ``file://`` URI and False when it lies outside both."""
    absolute = Path(path).resolve()
    base = cwd or Path.cwd()
    for root in (repo_root(absolute.parent), base.resolve()):
        if root is not None and absolute.is_relative_to(root):
            return absolute.relative_to(root).as_posix(), True
    return absolute.as_uri(), False
