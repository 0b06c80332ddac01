"""What each client sends per turn for stored lists (:mod:`scanner.measure.clients`), for the site, the exports
and the ``servers``/``history`` answers.

Client costs are never stored: they are computed from what is (each tool's own cost per provider, the raw tools
for their descriptions, the server's instructions by their OpenAI count), so a new client row shows on every
stored list at once with no migration or rescore. :func:`client_costs` reads many lists in a few queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scanner.store import Store
from scanner.store.rows import LeaderRow

CHUNK = 200
"""Lists read at a time (their tool costs, raw tools and descriptions dropped once the chunk is measured): memory
stays bounded."""


@dataclass(frozen=True)
class StoredToolset:
    """One stored list as the client rows need it: its toolset, its tokens per provider, and the OpenAI count of
    the server's instructions (None: it sent none)."""

    sha256: str
    tokens: Mapping[str, int]
    instructions_openai: int | None = None

    @property
    def key(self) -> str:
        """Two servers with the same list and other instructions show Codex another namespace text."""
        return f"{self.sha256}:{self.instructions_openai or 0}"


def client_costs(store: Store, lists: Iterable[StoredToolset]) -> dict[str, dict[str, int]]:
    """Each list's cost per client at rest, by :attr:`StoredToolset.key`: client key -> tokens."""
    from scanner.measure.client_render import tool_descriptions
    from scanner.measure.clients import measure_clients

    wanted: dict[str, list[StoredToolset]] = {}  # by toolset, in order
    for item in lists:
        if item.sha256 and item.tokens:
            wanted.setdefault(item.sha256, []).append(item)
    shas = sorted(wanted)
    out: dict[str, dict[str, int]] = {}
    for start in range(0, len(shas), CHUNK):  # one chunk's tool costs and descriptions in memory at a time
        chunk = shas[start : start + CHUNK]
        every = store.toolsets_costs(chunk)
        described = {
            sha: tool_descriptions(tools, [cost.index for cost in every.get(sha, [])])
            for sha, tools in store.toolsets_tools(chunk).items()
        }
        for sha in chunk:
            costs = every.get(sha, [])
            for item in wanted[sha]:
                if item.key in out:
                    continue
                measured = measure_clients(
                    dict(item.tokens),
                    [cost.tokens for cost in costs],
                    [cost.name for cost in costs],
                    descriptions=described.get(sha),
                    instructions_tokens=item.instructions_openai,
                )
                out[item.key] = {cost.client: cost.tokens for cost in measured}
    return out


def leader_client_costs(store: Store, rows: Iterable[LeaderRow]) -> dict[str, dict[str, int]]:
    """What each client sends per turn for every ranked leaderboard row, by :func:`leader_key`."""
    from scanner.report.data import is_ranked_outcome

    ranked = [row for row in rows if row.toolset_sha256 and row.tokens and is_ranked_outcome(row.outcome)]
    return client_costs(store, [_leader_stored(row) for row in ranked])


def leader_key(row: LeaderRow) -> str:
    return _leader_stored(row).key


def _leader_stored(row: LeaderRow) -> StoredToolset:
    return StoredToolset(str(row.toolset_sha256 or ""), dict(row.tokens), row.instructions_tokens.get("openai"))
