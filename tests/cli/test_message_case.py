"""Every error and usage line Fathom writes begins the same way (issue 46): lower case after ``fathom:``.

The convention is the command-line one: git's Documentation/CodingGuidelines ("Error Messages": do not capitalize
the first word only because it is the first word, "unable to open %s", not "Unable to open %s"), rustc's and
cargo's diagnostics ("error: could not find `Cargo.toml`"; the Rust API guidelines, C-GOOD-ERR: lowercase, no
trailing punctuation) and LLVM's Coding Standards ("start the first sentence with a lower-case letter"). Click,
under Typer, capitalises its usage errors ("No such option"); Fathom rewrites their first word
(:func:`scanner.cli.base.usage_message`). A word spelled with capitals anywhere keeps them (``tests/cli/message_case``).

Two checks: every message written in the code (an error raised, a ``_fail``, a ``failed=`` opening, a ``fathom:``
line echoed), read from the source, and every line the deliberate-mistake table produces (``test_bad_invocations``,
checked there, 131 command lines).
"""

from __future__ import annotations

import ast
from pathlib import Path

from .message_case import message_of, starts_right

SCANNER = Path(__file__).resolve().parents[2] / "scanner"


def _errors() -> set[str]:
    """The names of Fathom's error classes (scanner.errors and every subclass defined in scanner/)."""
    names = {"FathomError", "InputError", "TokenizerUnavailable", "OutputError", "StoreError", "WriterBusy"}
    grew = True
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in SCANNER.rglob("*.py")]
    while grew:
        grew = False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names:
                    bases = {base.id for base in node.bases if isinstance(base, ast.Name)}
                    if bases & names:
                        names.add(node.name)
                        grew = True
    return names


def _opening(node: ast.expr) -> str | None:
    """The literal text a message starts with ("" when it starts with a value), or None when it is not text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
    if isinstance(node, ast.BinOp):
        return _opening(node.left)
    return None


def written_messages() -> list[tuple[str, int, str]]:
    """(file, line, opening) of every message the code raises or prints as an error (or a note or warning on
    stderr)."""
    callers = _errors() | {"_fail", "BadParameter"}
    found = []
    for path in sorted(SCANNER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            texts = [node.args[0]] if name in callers and node.args else []
            texts += [keyword.value for keyword in node.keywords if keyword.arg == "failed"]
            openings = [_opening(text) for text in texts]
            if name in ("echo", "print", "write") and node.args:  # a line printed as it is: "fathom: ..."
                said = _opening(node.args[0]) or ""
                if said.startswith("fathom: "):
                    openings.append(message_of(said))
            for opening in openings:
                if opening is not None:
                    found.append((str(path.relative_to(SCANNER.parent)), node.lineno, opening))
    return found


def test_every_message_written_in_the_code_starts_lower_case() -> None:
    messages = written_messages()
    assert len(messages) > 200  # the collector sees the code's messages
    wrong = [f"{path}:{line}: {text[:70]!r}" for path, line, text in messages if not starts_right(text)]
    assert wrong == [], "\n".join(wrong)


def test_the_rule_reads_a_line_as_a_person_would() -> None:
    assert starts_right(message_of("fathom: cannot open database x.db: disk I/O error"))
    assert starts_right(message_of("fathom check: no such option: --bogus (see 'fathom check --help')"))
    assert starts_right(message_of("fathom: PostgreSQL is needed for distributed runs"))  # a name keeps its capitals
    assert starts_right(message_of("fathom: HTTP 401 from the server"))
    assert starts_right(message_of("fathom: --db names no database"))
    assert not starts_right(message_of("fathom: Cannot open database x.db"))
    assert not starts_right(message_of("fathom check: No such option: --bogus"))
    assert not starts_right(message_of("fathom: note: Config applied"))
