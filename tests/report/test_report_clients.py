"""Cost per client in the report: the leaderboard's JSON ``clients`` and CSV ``client_<key>`` columns, and the
server page's "Per client" line, all equal to scanner.measure.clients over the stored per-tool costs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from scanner.measure.clients import CLIENTS, measure_clients
from scanner.store import Store

from .test_report_site import read, site  # noqa: F401  (the site fixture)


def _expected(store: Store, sha: str, tokens: dict[str, int]) -> dict[str, int]:
    costs = store.toolset_costs(sha)
    tools = store.toolset_tools(sha)  # the raw list: the OpenAI row that keeps descriptions reads them
    described = [tools[cost.index].get("description") for cost in costs]
    measured = measure_clients(
        tokens, [cost.tokens for cost in costs], [cost.name for cost in costs], descriptions=described
    )
    return {cost.client: cost.tokens for cost in measured}


def test_leaderboard_json_and_csv_have_each_client(site: Path, story_store: Store) -> None:  # noqa: F811
    document = json.loads(read(site / "leaderboard.json"))
    rows = list(csv.DictReader(io.StringIO(read(site / "leaderboard.csv"))))
    keys = [client.key for client in CLIENTS]
    assert [name for name in rows[0] if name.startswith("client_")] == [f"client_{key}" for key in keys]
    by_name = {row["server"]: row for row in rows}
    for ranked in document["ranked"]:
        expected = _expected(story_store, ranked["toolset_sha256"], ranked["tokens"])
        assert ranked["clients"] == expected and list(expected) == keys
        assert {key: int(by_name[ranked["server"]][f"client_{key}"]) for key in keys} == expected
        # Claude Code with ENABLE_TOOL_SEARCH=auto loads these small lists whole; Gemini CLI always does.
        assert expected["claude-code-auto"] == ranked["tokens"]["anthropic"]
        assert expected["gemini-cli"] == ranked["tokens"]["gemini"]
    for unranked in document["unranked"]:
        assert unranked["clients"] == {}
        assert all(by_name[unranked["server"]][f"client_{key}"] == "" for key in keys)


def test_server_page_shows_each_client(site: Path) -> None:  # noqa: F811
    document = json.loads(read(site / "leaderboard.json"))
    zeta = next(row for row in document["ranked"] if row["server"] == "zeta")
    page = read(site / "servers" / "zeta.html")
    assert "<dt>Per client</dt>" in page
    for client in CLIENTS:
        assert f"{client.label} {zeta['clients'][client.key]:,}" in page
    assert "<dt>Per client</dt>" not in read(site / "servers" / "delta.html")
