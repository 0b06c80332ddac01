"""Reads: shared tables and helpers."""

from __future__ import annotations

from scanner.store import common

_SERVERS, _SCANS, _TOOLSETS, _TOKENS, _FINDINGS, _EVENTS = (
    common.SERVERS,
    common.SCANS,
    common.TOOLSETS,
    common.TOOLSET_TOKENS,
    common.FINDINGS,
    common.EVENTS,
)
