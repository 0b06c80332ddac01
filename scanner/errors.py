"""Run-fatal errors: bad input, bad configuration, a missing tokenizer, an unusable database.

One server's failure is never one of these: it is a :class:`scanner.models.ScanOutcome`. Each error carries the
exit code the command line ends with, and a one-line message a person can act on.

    FathomError
     ├── InputError            exit 2: a file or argument the command cannot use
     ├── TokenizerUnavailable  exit 4: the offline BPE file is missing or fails its hash check
     └── StoreError            exit 4: the database cannot be opened or migrated
"""

from __future__ import annotations


class FathomError(Exception):
    exit_code = 4


class InputError(FathomError):
    exit_code = 2


class TokenizerUnavailable(FathomError):
    exit_code = 4


class StoreError(FathomError):
    exit_code = 4
