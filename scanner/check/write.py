"""Render a check in any of its formats, and ``--write FORMAT=PATH``: the same check also written to files.

One check in CI feeds several consumers (SARIF for code scanning, Markdown for the job summary or a PR comment,
JSON for a script) without asking the server twice. Every format is written even when the server could not be
listed: SARIF then carries the tool-execution notification, JSON the outcome, Markdown and text the reason.
"""

from __future__ import annotations

from pathlib import Path

from scanner import safefile
from scanner.check.result import CheckResult
from scanner.errors import InputError

FORMATS = ("text", "json", "markdown", "sarif")


def render(
    result: CheckResult,
    fmt: str,
    *,
    colour: bool = False,
    verbose: bool = False,
    all_tools: bool = False,
    anchor: Path | None = None,
    rules_url: str | None = None,
) -> str:
    """``result`` in ``fmt`` (one of :data:`FORMATS`); ``anchor`` places a server's SARIF results, ``rules_url``
    links its rules (``helpUri``)."""
    if fmt == "json":
        from scanner.check import render_json as check_json

        return check_json.render(result)
    if fmt == "markdown":
        from scanner.check import render_markdown as check_markdown

        return check_markdown.render(result, verbose=verbose, all_tools=all_tools)
    if fmt == "sarif":
        from scanner.check import render_sarif as check_sarif

        return check_sarif.render(result, anchor=anchor, rules_url=rules_url)
    from scanner.check import render_text as check_text

    return check_text.render(result, colour=colour, verbose=verbose, all_tools=all_tools)


def parse_spec(spec: str) -> tuple[str, Path]:
    """``sarif=fathom.sarif`` → (``"sarif"``, ``Path("fathom.sarif")``)."""
    fmt, sep, path = spec.partition("=")
    fmt = fmt.strip().lower()
    if not sep or fmt not in FORMATS or not path.strip():
        raise InputError(f"--write {spec!r}: give FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}")
    return fmt, Path(path.strip())


def write(
    result: CheckResult,
    specs: list[tuple[str, Path]],
    *,
    verbose: bool = False,
    all_tools: bool = False,
    anchor: Path | None = None,
    rules_url: str | None = None,
) -> None:
    for fmt, path in specs:
        text = render(result, fmt, verbose=verbose, all_tools=all_tools, anchor=anchor, rules_url=rules_url)
        safefile.write_text(
            path, text, label=f"--write {fmt}", failed=f"cannot write --write {fmt}={path}"
        )  # never through a symlink (scanner/safefile.py)
