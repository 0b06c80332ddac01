"""The leaderboard's rows kept on disk while a report is built, so its memory does not grow with servers (issue 47).

:func:`scanner.report.build.build_leaderboard` shapes each server's :class:`ServerRow` as the store's rows are
read, a chunk at a time, and puts it here instead of in a list: pickled, beside the columns it is ranked, grouped
and named by, in a private temporary SQLite database (``sqlite3.connect("")``: a file that SQLite deletes when the
connection closes, read through a page cache of a few MB whatever its size). The ranking (score, then tokens per
turn with the dearest provider, then name), the places among the servers ranked in both runs (movement), the slugs
and the failure groups are SQL over it (``ORDER BY``, window functions, ``GROUP BY``): no list of every server is
sorted or held in Python. Every page and export reads the rows back through a :class:`RowView`, a sequence that
reads :data:`READ_CHUNK` rows at a time in its order.

Names are stored as UTF-8 bytes (lone surrogates kept: ``surrogatepass``), compared as BLOBs: byte order of UTF-8
is code point order, the order Python sorts ``str`` in, so the ranking and every list are in the same order as
before the rows left memory.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, overload

from scanner.errors import InputError
from scanner.report.data import FAILURE_CAUSES, FailureGroup, Leaderboard, ReasonGroup, ServerRow, failure_cause
from scanner.report.nextstep import reason_group
from scanner.report.text import clean_text, slugify

_set = object.__setattr__  # on a frozen ServerRow just unpickled (see BoardSpool.read)

READ_CHUNK = 250
"""Rows a :class:`RowView` reads from the spool at a time."""

_CAUSE_ORDER = {key: index for index, (key, _, _) in enumerate(FAILURE_CAUSES)}
_RANKING = "c.score DESC, c.tokens, c.name"  # best first: as ``(-score, tokens, name)`` sorts in Python

_SCHEMA = """
CREATE TABLE cur (
    seq INTEGER PRIMARY KEY,
    name BLOB NOT NULL,
    ranked INTEGER NOT NULL,
    score REAL,
    tokens INTEGER,
    outcome BLOB NOT NULL,
    cause TEXT NOT NULL,
    reason_key BLOB NOT NULL,
    reason_label BLOB NOT NULL,
    slug TEXT NOT NULL,
    codes TEXT NOT NULL,
    row BLOB NOT NULL
);
CREATE TABLE prev (name BLOB NOT NULL, score REAL NOT NULL, tokens INTEGER NOT NULL);
CREATE TABLE board (pos INTEGER PRIMARY KEY, seq INTEGER NOT NULL, ranked INTEGER NOT NULL, now INTEGER,
    before INTEGER);
"""


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def movement(place: int, previous: int | None) -> tuple[str, int]:
    """``(movement, places moved)`` from a server's place among the servers ranked in both runs, now and before
    (``previous`` None: it was not ranked then, so it is ``new``)."""
    if previous is None:
        return "new", 0
    if place < previous:
        return "up", previous - place
    if place > previous:
        return "down", place - previous
    return "same", 0


class BoardSpool:
    """One report's leaderboard rows on disk: :meth:`add` each row (in name order) and each of the previous run's
    ranked servers (:meth:`add_previous`), :meth:`finish` once, then read :meth:`ranked`, :meth:`unranked` and
    :meth:`every` (ranked then unranked)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("")  # a private temporary database on disk, removed when closed
        self._db.executescript(_SCHEMA)
        self._pending: list[tuple[Any, ...]] = []
        self._previous: list[tuple[bytes, float, int]] = []
        self._counts = (0, 0)

    def close(self) -> None:
        self._db.close()

    def add(self, row: ServerRow, score: float | None, tokens: int) -> None:
        """One server's row of this run (``score`` None: not ranked), its slug and rank still to come."""
        name = str(row.name)
        cause = failure_cause(row.outcome)[0] if score is None else ""
        reason = reason_group(row.outcome, row.detail) if score is None else ("", "")
        self._pending.append(
            (
                _bytes(name),
                int(score is not None),
                score,
                tokens,
                _bytes(row.outcome),
                cause,
                _bytes(reason[0]),
                _bytes(reason[1]),
                slugify(name),
                " ".join(row.codes),
                pickle.dumps(row, pickle.HIGHEST_PROTOCOL),
            )
        )
        if len(self._pending) >= READ_CHUNK:
            self._flush()

    def add_previous(self, name: str, score: float, tokens: int) -> None:
        """One server ranked in the previous run, with its score and tokens (its place comes from the SQL)."""
        self._previous.append((_bytes(name), score, tokens))
        if len(self._previous) >= READ_CHUNK:
            self._flush()

    def _flush(self) -> None:
        self._db.executemany(
            "INSERT INTO cur (name, ranked, score, tokens, outcome, cause, reason_key, reason_label, slug, codes, row) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self._pending,
        )
        self._db.executemany("INSERT INTO prev (name, score, tokens) VALUES (?, ?, ?)", self._previous)
        self._pending.clear()
        self._previous.clear()

    def finish(self) -> None:
        """Settle the slugs (:func:`scanner.report.text.unique_slugs`' rules), the ranking and the places."""
        self._flush()
        db = self._db
        db.execute("CREATE INDEX cur_slug ON cur (slug)")
        self._settle_slugs()
        # Places among the servers ranked in both runs, now and before: movement compares these, so a newcomer
        # or a server that left moves no one else.
        db.executescript(
            f"""
            CREATE INDEX prev_name ON prev (name);
            CREATE INDEX cur_name ON cur (name) WHERE ranked = 1;
            CREATE TABLE now_place AS SELECT c.seq AS seq, ROW_NUMBER() OVER (ORDER BY {_RANKING}) AS place
                FROM cur c WHERE c.ranked = 1 AND c.name IN (SELECT name FROM prev);
            CREATE TABLE before_place AS
                SELECT c.name AS name, ROW_NUMBER() OVER (ORDER BY {_RANKING}) AS place
                FROM prev c WHERE c.name IN (SELECT name FROM cur WHERE ranked = 1);
            CREATE INDEX now_seq ON now_place (seq);
            CREATE INDEX before_name ON before_place (name);
            INSERT INTO board (pos, seq, ranked, now, before)
                SELECT ROW_NUMBER() OVER (ORDER BY {_RANKING}), c.seq, 1, n.place, b.place
                FROM cur c LEFT JOIN now_place n ON n.seq = c.seq LEFT JOIN before_place b ON b.name = c.name
                WHERE c.ranked = 1;
            """
        )
        ranked = db.execute("SELECT COUNT(*) FROM board").fetchone()[0]
        db.execute(
            "INSERT INTO board (pos, seq, ranked) SELECT ? + ROW_NUMBER() OVER (ORDER BY outcome, name), seq, 0 "
            "FROM cur WHERE ranked = 0",
            (ranked,),
        )
        db.executescript(
            "DROP TABLE now_place; DROP TABLE before_place; DROP TABLE prev; "
            "CREATE INDEX board_seq ON board (seq); CREATE INDEX cur_cause ON cur (cause, name) WHERE ranked = 0;"
        )
        total = db.execute("SELECT COUNT(*) FROM board").fetchone()[0]
        self._counts = (ranked, total - ranked)

    def _settle_slugs(self) -> None:
        """Names whose short slugs collide (a crafted 32-bit hash match) all get the whole SHA-256; should even
        those collide, the build is refused rather than one page overwriting another."""
        db = self._db
        clashing = "SELECT slug FROM cur GROUP BY slug HAVING COUNT(DISTINCT name) > 1"
        for (slug,) in db.execute(clashing).fetchall():
            names = db.execute("SELECT DISTINCT name FROM cur WHERE slug = ?", (slug,)).fetchall()
            for (name,) in names:
                db.execute("UPDATE cur SET slug = ? WHERE name = ?", (slugify(_text(name), digits=64), name))
        for (slug,) in db.execute(clashing).fetchall():
            first, second = (
                _text(name)
                for (name,) in db.execute(
                    "SELECT name FROM cur WHERE slug = ? GROUP BY name ORDER BY MIN(seq) LIMIT 2", (slug,)
                )
            )
            raise InputError(
                f"servers {clean_text(first, limit=80)!r} and {clean_text(second, limit=80)!r} would share the"
                f" page {slug}.html; the report refuses to overwrite one with the other"
            )

    def ranked(self) -> RankedRows:
        """The ranked servers, best first."""
        return RankedRows(self, "b.ranked = 1", (), "b.pos", self._counts[0])

    def unranked(self) -> UnrankedRows:
        """The servers not ranked, by outcome then name."""
        return UnrankedRows(self, "b.ranked = 0", (), "b.pos", self._counts[1])

    def every(self) -> RowView:
        """Every server: the ranked ones best first, then the others (as ``(*ranked, *unranked)``)."""
        return RowView(self, "1", (), "b.pos", sum(self._counts))

    def rule_codes(self) -> tuple[str, ...]:
        """Every rule code of a ranked server's current findings, sorted (from a column: no row read whole)."""
        found: set[str] = set()
        for (codes,) in self._db.execute("SELECT DISTINCT codes FROM cur WHERE ranked = 1 AND codes != ''"):
            found.update(codes.split(" "))
        return tuple(sorted(found))

    def unranked_outcomes(self) -> tuple[str, ...]:
        """Every outcome of an unranked server, sorted."""
        return tuple(
            sorted(
                _text(outcome) for (outcome,) in self._db.execute("SELECT DISTINCT outcome FROM cur WHERE ranked = 0")
            )
        )

    def failure_groups(self) -> tuple[FailureGroup, ...]:
        """The unranked servers grouped by cause (:data:`scanner.report.data.FAILURE_CAUSES` order), each by
        name."""
        found = {cause for (cause,) in self._db.execute("SELECT DISTINCT cause FROM cur WHERE ranked = 0")}
        groups = []
        for key in sorted(found, key=lambda key: _CAUSE_ORDER.get(key, len(_CAUSE_ORDER))):
            rows = CauseRows(self, "b.ranked = 0 AND c.cause = ?", (key,), "c.name, c.outcome")
            groups.append(FailureGroup(key=key, label=failure_cause(rows[0].outcome)[1], rows=rows))
        return tuple(groups)

    def reasons(self, cause: str) -> tuple[ReasonGroup, ...]:
        """The servers of one cause grouped by reason, the largest group first, then by reason (each group's label
        is that of its first server by name)."""
        found = self._db.execute(
            "SELECT reason_key, COUNT(*), MIN(name) FROM cur WHERE ranked = 0 AND cause = ? GROUP BY reason_key "
            "ORDER BY MIN(name)",
            (cause,),
        ).fetchall()
        groups = []
        for key, count, first in found:
            (label,) = self._db.execute(
                "SELECT reason_label FROM cur WHERE ranked = 0 AND cause = ? AND reason_key = ? AND name = ? "
                "ORDER BY outcome LIMIT 1",
                (cause, key, first),
            ).fetchone()
            rows = RowView(
                self, "b.ranked = 0 AND c.cause = ? AND c.reason_key = ?", (cause, key), "c.name, c.outcome", count
            )
            groups.append(ReasonGroup(key=_text(key), label=_text(label), rows=rows))
        return tuple(sorted(groups, key=lambda group: (-len(group.rows), group.label)))

    def read(self, where: str, params: tuple[Any, ...], order: str, start: int, stop: int) -> Iterator[ServerRow]:
        """The rows of a view from ``start`` to ``stop``, :data:`READ_CHUNK` at a time."""
        cursor = self._db.execute(
            f"SELECT c.row, c.slug, b.ranked, b.pos, b.now, b.before FROM board b JOIN cur c ON c.seq = b.seq "
            f"WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*params, max(stop - start, 0), start),
        )
        while part := cursor.fetchmany(READ_CHUNK):
            for blob, slug, ranked, pos, now, before in part:
                # A fresh copy each time, owned by no one else: its last fields are set in place (a dataclasses
                # ``replace`` per row per walk cost more than the unpickling).
                row: ServerRow = pickle.loads(blob)
                _set(row, "slug", slug)
                if ranked:
                    moved, moved_by = movement(now or 0, before)
                    _set(row, "rank", pos)
                    _set(row, "movement", moved)
                    _set(row, "moved_by", moved_by)
                yield row

    def count(self, where: str, params: tuple[Any, ...]) -> int:
        return int(
            self._db.execute(
                f"SELECT COUNT(*) FROM board b JOIN cur c ON c.seq = b.seq WHERE {where}", params
            ).fetchone()[0]
        )


class RowView(Sequence[ServerRow]):
    """Some of a :class:`BoardSpool`'s rows in one order, read from it each time they are walked (never held):
    ``len``, iteration, an index and a slice (another view) as for a tuple."""

    def __init__(
        self,
        spool: BoardSpool,
        where: str,
        params: tuple[Any, ...],
        order: str,
        size: int | None = None,
        start: int = 0,
    ) -> None:
        self._spool, self._where, self._params, self._order, self._start = spool, where, params, order, start
        self._size = spool.count(where, params) - start if size is None else size

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[ServerRow]:
        return self._spool.read(self._where, self._params, self._order, self._start, self._start + self._size)

    @overload
    def __getitem__(self, index: int) -> ServerRow: ...

    @overload
    def __getitem__(self, index: slice) -> RowView: ...

    def __getitem__(self, index: int | slice) -> ServerRow | RowView:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._size)
            if step != 1:
                raise ValueError("a view of the spool is sliced without a step")
            view = RowView(
                self._spool, self._where, self._params, self._order, max(stop - start, 0), self._start + start
            )
            return view
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return next(
            self._spool.read(self._where, self._params, self._order, self._start + index, self._start + index + 1)
        )


class RankedRows(RowView):
    """The ranked servers (:meth:`BoardSpool.ranked`), which also say their rule codes."""

    def rule_codes(self) -> tuple[str, ...]:
        return self._spool.rule_codes()


class UnrankedRows(RowView):
    """The servers not ranked (:meth:`BoardSpool.unranked`), which also group themselves by cause and say their
    outcomes."""

    def failure_groups(self) -> tuple[FailureGroup, ...]:
        return self._spool.failure_groups()

    def outcomes(self) -> tuple[str, ...]:
        return self._spool.unranked_outcomes()


class CauseRows(RowView):
    """The servers not ranked for one cause (a :class:`FailureGroup`'s), which also group themselves by reason."""

    def reasons(self) -> tuple[ReasonGroup, ...]:
        return self._spool.reasons(str(self._params[0]))


def names_and_slugs(board: Leaderboard) -> Iterator[tuple[str, str]]:
    """Each server's name and slug, the ranked ones first; from the board's spool's columns when it has one (no row
    read whole)."""
    if isinstance(board.ranked, RowView):
        spool = board.ranked._spool
        rows = spool._db.execute("SELECT b.pos, c.name, c.slug FROM board b JOIN cur c ON c.seq = b.seq ORDER BY b.pos")
        while part := rows.fetchmany(READ_CHUNK):
            yield from ((_text(name), slug) for _, name, slug in part)
        return
    yield from ((row.name, row.slug) for row in (*board.ranked, *board.unranked))


def release(board: Leaderboard) -> None:
    """Close the board's spool, if it has one (its file goes with it); its views keep their lengths only."""
    if isinstance(board.ranked, RowView):
        board.ranked._spool.close()


def every_row(board: Leaderboard) -> Sequence[ServerRow]:
    """Every row of ``board``, the ranked ones first (as ``(*board.ranked, *board.unranked)``), read from its
    spool when it has one rather than copied."""
    if isinstance(board.ranked, RowView):
        return board.ranked._spool.every()
    return (*board.ranked, *board.unranked)
