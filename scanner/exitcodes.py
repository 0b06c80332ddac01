"""Every command's exit codes in ONE table: each command's ``--help`` ends with its own rows, the top-level help
lists the union, and a test holds the README's table and the code's ``exit_code`` values to it.

A light module (no imports): ``fathom --help`` reads it at start-up.
"""

from __future__ import annotations

INTERRUPTED = "interrupted (Ctrl-C or SIGTERM)"
USAGE = "usage or input error (a bad flag value, an unusable input file)"
DATABASE = "environment error: the database cannot be opened, read or written"
DATABASE_SHORT = "environment error: the database is unusable"
QUERY = {
    0: "done (an empty answer is '(none)')",
    2: "usage or input error: no database at --db, an unknown server, run or rule",
    4: DATABASE,
    130: INTERRUPTED,
}

COMMAND_CODES: dict[str, dict[int, str]] = {
    "check": {
        0: "done (problems found still exit 0 unless a gate is set)",
        1: "a gate failed (--strict, --fail-on, --fail-on-new, --min-score, --max-tokens, --max-increase, "
        "--fail-on-reject): one line each",
        2: USAGE + "; --url that is not an http(s) URL; a bad config file or baseline; an output over an input",
        3: "the server could not be checked (timeout, refused, auth required, not MCP, ...): the outcome says why",
        4: "environment error: the offline tokenizer is missing, an output or standard output cannot be written",
        130: INTERRUPTED,
    },
    "scan": {
        0: "done: the run finished (a server that failed is an outcome in the run, not an error)",
        2: "usage or input error; --resume with nothing to resume; --enqueue without PostgreSQL",
        4: "environment error: tokenizer missing, database unusable or another scan writing to it",
        130: INTERRUPTED + "; `fathom scan --resume --db DB` finishes the run",
    },
    "worker": {
        0: "stopped: --until-idle found no job left",
        2: "usage or input error; --db is not PostgreSQL",
        4: "environment error: the offline tokenizer is missing, the database is unusable",
        130: INTERRUPTED + "; its running jobs go back to the queue",
    },
    "doctor": {
        0: "healthy: every lane answered and callers without a credential can tell what they miss; or the server "
        "answered and no credential was given to compare",
        1: "a silent lane (MCP601) or authentication a client cannot discover (MCP602)",
        2: USAGE,
        3: "could not connect in any lane",
        130: INTERRUPTED,
    },
    "try": {
        0: "done (misses still exit 0 unless --strict)",
        1: "--strict and a case was missed",
        2: "usage or input error; no consent to send",
        3: "the server named for the tool list could not be listed",
        4: "environment error: the API key variable is not set, tokenizer missing, database unusable",
        5: "the provider refused or failed (401/403, 404 model, 429 after retries, 5xx, timeout)",
        130: INTERRUPTED,
    },
    "runs": QUERY,
    "servers": QUERY,
    "history": QUERY,
    "findings": QUERY,
    "diff": QUERY,
    "rescore": {
        0: "done",
        2: USAGE,
        4: DATABASE_SHORT + " or another scan is writing to it",
        130: INTERRUPTED,
    },
    "report": {
        0: "done",
        2: "usage or input error; no finished run to report",
        4: DATABASE_SHORT + ", or the report cannot be written",
        130: INTERRUPTED,
    },
    "demo": {
        0: "done",
        2: USAGE,
        4: "environment error: the demo's folder or database cannot be written",
        130: INTERRUPTED,
    },
    "rules": {0: "done", 2: USAGE},
    "rule": {0: "done", 2: "usage error or an unknown rule code or slug (the nearest is named)"},
}

TOP_LEVEL: dict[int, str] = {
    0: "done (problems found still exit 0 unless a gate is set)",
    1: "check: a gate failed (--strict, --fail-on, ...); try: --strict and a case missed; doctor: a lane fault",
    2: "usage or input error",
    3: "the server could not be checked (the outcome says why)",
    4: "environment error (offline tokenizer missing, database unusable or busy, API key not set)",
    5: "try: the model's provider refused or failed",
    130: "interrupted",
}


EPILOG_WIDTH = 78
"""Columns an exit-code row fills: Click indents the epilog by two, and help reads at 80 columns."""


def epilog(codes: dict[int, str]) -> str:
    """The ``Exit codes:`` block of a help text (``\\b`` keeps Click from rewrapping it), each meaning wrapped to
    :data:`EPILOG_WIDTH` under itself."""
    import textwrap

    rows = [
        textwrap.fill(
            meaning,
            EPILOG_WIDTH,
            initial_indent=f"  {code:<4} ",
            subsequent_indent=" " * 7,
            break_long_words=False,
            break_on_hyphens=False,
        )
        for code, meaning in sorted(codes.items())
    ]
    return "\b\nExit codes:\n" + "\n".join(rows)


def command_epilog(name: str) -> str:
    return epilog(COMMAND_CODES[name])
