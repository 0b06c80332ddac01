"""``fathom rules`` and ``fathom rule``: the catalogue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    pass
from scanner.cli.base import FormatOption, QueryFormat, WideOption, _table, app


@app.command(epilog=exitcodes.command_epilog("rules"))
def rules(fmt: FormatOption = QueryFormat.table, wide: WideOption = False) -> None:
    """List the rule catalogue in code order: code, severity, status (stable, preview, deprecated, removed),
    slug and the fix (JSON and CSV add the scope and the whole doc).

    `fathom rule CODE` explains one; `fathom check --select/--ignore` take code prefixes (MCP2, MCP401)."""
    from scanner.report import queries

    _table(fmt, queries.rules, queries.RULE_COLUMNS, wide=wide, optional=queries.OPTIONAL_COLUMNS["rules"])


@app.command(epilog=exitcodes.command_epilog("rule"))
def rule(
    code: Annotated[str, typer.Argument(metavar="CODE", help="A rule code or slug, e.g. MCP205 or param-untyped.")],
) -> None:
    """Explain one rule: what it checks, why a model stumbles over it, and how to fix it, with its status and its
    precision measured on hand-labelled real tool lists (docs/rules.md).

    An unknown code or slug is an error (exit 2) that names the nearest one."""
    from scanner.report import queries
    from scanner.rules import RULES
    from scanner.rules.catalogue import precision_label

    found = RULES[queries.rule_code(code)]
    status = {
        "stable": "stable: counts in the score and the gates",
        "preview": "preview: shown only with --preview (check, findings, servers, history, diff, report), marked, "
        "never counted in the score or a gate",
        "removed": "removed: retired, it never runs; the code is never reused",
    }.get(found.status, found.status)
    typer.echo(
        f"{found.code} {found.slug} ({found.severity.label}, {found.status})\n\n{found.doc}\n\nFix: {found.hint}\n\n"
        f"Status: {status}.\nPrecision: {precision_label(found.code)}."
    )
