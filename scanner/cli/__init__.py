"""The ``fathom`` command line: one module per command family, each command parses, calls ONE library
function, renders and sets the exit code; the app, its error handling and the shared options live in
``scanner.cli.base``."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

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
        code: object = 130
    except SystemExit as done:
        code = done.code
    else:
        code = 0
    leave(code)


def leave(code: object) -> NoReturn:
    """End the process with ``code`` as ``sys.exit(code)`` would, without tearing the interpreter down.

    Python's teardown frees every module and object a command loaded (SQLAlchemy's, the tokenizer's 200,000
    ranks): 0.3-0.5 s of CPU after the command is done, a fifth of a one-server scan. What the teardown does for
    the user still happens: the exit handlers run (temporary directories removed, logs flushed) and the output is
    flushed. Python ends as usual instead when another thread is still running, when ``code`` is not a number
    (it is printed), or when the output cannot be flushed (a closed pipe: Python reports it as it always does).
    """
    others = [thread for thread in threading.enumerate() if thread is not threading.main_thread()]
    if others or not (code is None or type(code) is int):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(code or 0)
