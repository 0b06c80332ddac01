"""The ``fathom`` command line: one module per command family, each command parses, calls ONE library
function, renders and sets the exit code; the app, its error handling and the shared options live in
``scanner.cli.base``."""

from __future__ import annotations

import sys

import typer

# Importing a family registers its commands, in the order ``fathom --help`` lists them.
# isort: off
from scanner.cli import check  # noqa: F401
from scanner.cli import doctor  # noqa: F401
from scanner.cli import scan  # noqa: F401
from scanner.cli import queries  # noqa: F401
from scanner.cli import report  # noqa: F401
from scanner.cli import rules  # noqa: F401
from scanner.cli import trial  # noqa: F401

# isort: on
from scanner.cli.base import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    from scanner.envguard import protect_environment

    protect_environment()  # children cannot read this process's environment (scanner/envguard.py)
    try:
        app(prog_name="fathom")  # usage lines say "fathom", also when run as ``python -m scanner``
    except KeyboardInterrupt:
        typer.echo("fathom: interrupted", err=True)
        sys.exit(130)
