"""The ``fathom`` command line: one module per command family, each command parses, calls ONE library
function, renders and sets the exit code; the app, its error handling and the shared options live in
``scanner.cli.base``."""

from __future__ import annotations

import atexit
import errno
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
    if sys.stdout is None:  # started with standard output closed (``fathom rules >&-``)
        _stdout_failed("standard output is closed: nothing can be written (redirect it to a file)")
    try:
        app(prog_name="fathom")  # usage lines say "fathom", also when run as ``python -m scanner``
    except KeyboardInterrupt:
        typer.echo("fathom: interrupted", err=True)
        code: object = 130
    except SystemExit as done:
        code = done.code
    except BrokenPipeError:  # ``fathom rules | head -1``: the reader has what it wanted
        _quiet_stdout()
        code = 141  # as a shell reports a process ended by SIGPIPE
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            raise
        _stdout_failed(f"cannot write to standard output: {exc.strerror or exc}")
    else:
        code = 0
    leave(code)


# What writing to standard output can fail with: a full disk or /dev/full, a quota, a file too large, an I/O error.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _stdout_failed(message: str) -> NoReturn:
    """Any command's output that cannot be written: one line on stderr, exit 4 (an environment error)."""
    _quiet_stdout()
    typer.echo(f"fathom: {message}", err=True)
    leave(4)


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
