"""Reads: a server's newest stored tool list, whole, for ``fathom check --db DB --server NAME``.

It is the server's leaderboard row in the run of its newest successful scan (the same read the leaderboard makes,
so the same findings under the run's scoring catalogue, the scan's own included, and the same stored tokens),
with the tool list itself, each tool's stored cost and the server's instructions. ``check`` scores it with the
same function as the leaderboard, so both print one number.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scanner import wire
from scanner.errors import InputError
from scanner.models import TokenCount, ToolCost
from scanner.store import codec, common
from scanner.store.read.leaderboard_reads import _leaderboard
from scanner.store.rows import LeaderRow
from scanner.store.tables import InstructionsRow, InstructionsToken, Scan, Server, ToolsetRow, ToolToken


@dataclass(frozen=True)
class StoredList:
    """One server's newest stored tool list and everything the leaderboard knows of it."""

    server: str
    run_id: int
    scan_id: int
    scanned_at: datetime | None
    row: LeaderRow  # the leaderboard's row of that scan: outcome, tools count, tokens, findings
    tools: list[Any]  # the list exactly as the server sent it
    tokens: dict[str, TokenCount]  # per provider, with the method that counted it
    tool_costs: list[ToolCost]  # each tool's own cost per provider, in list order
    instructions: str | None = None  # the server's instructions of that scan, when it sent any
    instructions_tokens: dict[str, TokenCount] | None = None


def stored_list(sessions: sessionmaker[Session], server: str) -> StoredList:
    """The newest stored tool list of ``server``.

    Raises :class:`InputError` (one line) for a server not in the database, or one whose list was never read.
    """
    name = wire.clean_str(server)  # as the engine stores it (NUL, lone surrogates -> U+FFFD)
    with sessions() as session:
        found = session.scalar(select(Server).where(Server.name == name))
        if found is None:
            raise common.unknown_server(session, server)  # "Did you mean ...?", as every other command says
        scan = session.get(Scan, found.last_ok_scan_id) if found.last_ok_scan_id is not None else None
        if scan is None or scan.toolset_id is None:
            last = session.get(Scan, found.last_scan_id) if found.last_scan_id is not None else None
            said = f" (its last scan: {last.outcome})" if last is not None else ""
            raise InputError(f"{server!r} has no stored tool list: no scan of it ever read one{said}.")
        rows = [row for row in _leaderboard(session, scan.run_id, found.id) if row.scan_id == scan.id]
        if not rows:  # the scan is the server's; its run's read must hold it
            raise InputError(f"{server!r}: scan {scan.id} is not in run {scan.run_id}'s leaderboard.")
        row = rows[0]
        toolset = session.get(ToolsetRow, scan.toolset_id)
        if toolset is None:
            raise InputError(f"{server!r}: the stored tool list of scan {scan.id} is missing.")
        tools = codec.decompress_tools(toolset.data)
        tokens = {
            provider: TokenCount(provider=provider, tokens=count, method=row.token_methods.get(provider, ""))
            for provider, count in row.tokens.items()
        }
        costs = [
            ToolCost(name=tool.name, index=tool.tool_index, tokens=dict(tool.tokens or {}))
            for tool in session.scalars(
                select(ToolToken).where(ToolToken.toolset_id == toolset.id).order_by(ToolToken.tool_index)
            )
        ]
        text: str | None = None
        told: dict[str, TokenCount] | None = None
        if scan.instructions_id is not None:
            kept = session.get(InstructionsRow, scan.instructions_id)
            if kept is not None and kept.text:
                text = kept.text
                told = {
                    token.provider: TokenCount(provider=token.provider, tokens=token.tokens, method=token.method)
                    for token in session.scalars(
                        select(InstructionsToken).where(InstructionsToken.instructions_id == kept.id)
                    )
                }
        return StoredList(
            server=found.name,
            run_id=scan.run_id,
            scan_id=scan.id,
            scanned_at=scan.scanned_at,
            row=row,
            tools=tools,
            tokens=tokens,
            tool_costs=costs,
            instructions=text,
            instructions_tokens=told,
        )
