"""Reads: toolsets."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session, sessionmaker

from scanner.errors import InputError
from scanner.models import Finding, TokenCount, ToolCost
from scanner.store import codec, common
from scanner.store.read.shared import _TOKENS, _TOOLSETS
from scanner.store.tables import (
    InstructionsToken,
    Scan,
    ToolsetRow,
    ToolsetToken,
    ToolToken,
)


def _toolsets(
    connection: Connection | Session, ids: Sequence[int] | None
) -> tuple[dict[int, tuple[int, str]], dict[int, dict[str, int]]]:
    """Each toolset's (tools count, sha256) and its tokens per provider: of ``ids`` (in chunks), or of every
    toolset when None. The one read of toolset sizes and tokens behind every query that shows them."""
    sizes: dict[int, tuple[int, str]] = {}
    tokens: dict[int, dict[str, int]] = defaultdict(dict)
    query = select(
        _TOOLSETS.c.id, _TOOLSETS.c.tools_count, _TOOLSETS.c.sha256, _TOKENS.c.provider, _TOKENS.c.tokens
    ).outerjoin(_TOKENS, _TOKENS.c.toolset_id == _TOOLSETS.c.id)
    for chunk in [None] if ids is None else common.chunks(ids):
        part = query if chunk is None else query.where(_TOOLSETS.c.id.in_(chunk))
        for toolset_id, tools_count, sha256, provider, count in connection.execute(part):
            sizes[toolset_id] = (tools_count, sha256)
            if provider is not None:
                tokens[toolset_id][provider] = count
    return sizes, tokens


def _toolset_row(session: Session, sha256: str) -> ToolsetRow:
    row = session.scalar(select(ToolsetRow).where(ToolsetRow.sha256 == sha256))
    if row is None:
        raise InputError(f"no toolset {sha256[:12]}… in this database.")
    return row


def toolset_tools(sessions: sessionmaker[Session], sha256: str) -> list[Any]:
    """A stored tool list exactly as the server sent it (raw JSON values)."""
    with sessions() as session:
        return codec.decompress_tools(_toolset_row(session, sha256).data)


def toolset_findings(sessions: sessionmaker[Session], sha256: str, rule_version: str) -> list[Finding]:
    """A toolset's own findings under ``rule_version``, worst first (no over-time findings: those are a scan's)."""
    with sessions() as session:
        row = _toolset_row(session, sha256)
        return sorted(common.toolset_findings(session, row.id, rule_version), key=Finding.sort_key)


def toolset_tokens(sessions: sessionmaker[Session], sha256: str) -> dict[str, TokenCount]:
    """A toolset's tokens per turn for each provider, with the method that counted them."""
    with sessions() as session:
        row = _toolset_row(session, sha256)
        return {
            token.provider: TokenCount(provider=token.provider, tokens=token.tokens, method=token.method)
            for token in session.scalars(select(ToolsetToken).where(ToolsetToken.toolset_id == row.id))
        }


def toolset_costs(sessions: sessionmaker[Session], sha256: str, largest: int | None = None) -> list[ToolCost]:
    """Each tool's own cost per provider, in list order; ``largest=5`` gives the five dearest, dearest first."""
    with sessions() as session:
        row = _toolset_row(session, sha256)
        query = select(ToolToken).where(ToolToken.toolset_id == row.id)
        if largest is not None:
            query = query.order_by(ToolToken.max_tokens.desc(), ToolToken.tool_index).limit(largest)
        else:
            query = query.order_by(ToolToken.tool_index)
        return [
            ToolCost(name=tool.name, index=tool.tool_index, tokens=dict(tool.tokens or {}))
            for tool in session.scalars(query)
        ]


def toolsets_costs(sessions: sessionmaker[Session], shas: Sequence[str]) -> dict[str, list[ToolCost]]:
    """Each tool's own cost per provider, in list order, for many toolsets at once (a few queries per chunk of
    hashes, never one per toolset: the report reads them for every ranked server)."""
    wanted = sorted(set(shas))
    found: dict[str, list[ToolCost]] = defaultdict(list)
    with sessions() as session:
        for chunk in common.chunks(wanted):
            query = (
                select(ToolsetRow.sha256, ToolToken)
                .join(ToolToken, ToolToken.toolset_id == ToolsetRow.id)
                .where(ToolsetRow.sha256.in_(chunk))
                .order_by(ToolsetRow.sha256, ToolToken.tool_index)
            )
            for sha, tool in session.execute(query):
                found[sha].append(ToolCost(name=tool.name, index=tool.tool_index, tokens=dict(tool.tokens or {})))
    return dict(found)


def scans_instructions_tokens(
    sessions: sessionmaker[Session], scan_ids: Sequence[int], provider: str = "openai"
) -> dict[int, int]:
    """What each scan's instructions cost ``provider`` (scan id -> tokens; scans without instructions left out), a
    query per chunk of scans: the client rows of ``servers``/``history`` show Codex's namespace text with them."""
    found: dict[int, int] = {}
    with sessions() as session:
        for chunk in common.chunks(sorted(set(scan_ids))):
            query = (
                select(Scan.id, InstructionsToken.tokens)
                .join(InstructionsToken, InstructionsToken.instructions_id == Scan.instructions_id)
                .where(Scan.id.in_(chunk), InstructionsToken.provider == provider)
            )
            for scan_id, tokens in session.execute(query):
                found[scan_id] = tokens
    return found
