"""Run-fatal errors: bad input, bad configuration, a missing tokenizer, an unusable database, an unwritable output.

One server's failure is never one of these: it is a :class:`scanner.models.ScanOutcome`. Each error carries the
exit code the command line ends with, and a one-line message a person can act on. The command line catches
:class:`FathomError` in one place (``scanner.cli.base.FathomGroup``), prints ``fathom: <message>`` and exits with
``exit_code``; library code raises these and never prints.

    FathomError
     ├── InputError            exit 2: a file or argument the command cannot use
     ├── TokenizerUnavailable  exit 4: the offline BPE file is missing or fails its hash check
     ├── OutputError           exit 4: a report or saved file cannot be written (disk full, permissions)
     └── StoreError            exit 4: the database cannot be opened, migrated, read or written
          └── WriterBusy       exit 4: another process holds the database's writer lock
"""

from __future__ import annotations


class FathomError(Exception):
    exit_code = 4


class InputError(FathomError):
    exit_code = 2


class TokenizerUnavailable(FathomError):
    exit_code = 4


class OutputError(FathomError):
    exit_code = 4


class StoreError(FathomError):
    exit_code = 4


class WriterBusy(StoreError):
    """A second writer (a scan, a rescore) on a database another live process is writing to."""
