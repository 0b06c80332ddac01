"""The whole site, every file, stays byte for byte what it was: a digest of each file of two builds over a broad
corpus, compared with ``snapshots/site-digests.json``.

The corpus is the story's six servers plus the real tool lists of ``tests/fixtures/real`` written through the
store's write path over three runs (lists that shrink, timeouts, sign-in walls), so the leaderboard, the change
block, the health page, the exports, the badges and a page per server are all in it; the site is built for the
newest run and for the run before it (a report of an older run). Speed work on the report must leave this
unchanged; a change meant to alter the site regenerates it with ``FATHOM_UPDATE_SNAPSHOTS=1``, and the failure
names the files that differ.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scanner.models import Outcome, ScanOutcome
from scanner.report import build_report
from scanner.store import Store

from .conftest import FIXED_NOW, RUNS, failed, ok

REAL = Path(__file__).parent.parent / "fixtures" / "real"
DIGESTS = Path(__file__).parent / "snapshots" / "site-digests.json"


def real_runs() -> list[dict[str, ScanOutcome]]:
    """The story's runs with every real tool list added: in run 3 every third list loses its last tool, and
    some servers time out or ask to sign in, in a different run each."""
    lists: dict[str, list[Any]] = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))["tools"]
        for path in sorted(REAL.glob("*.json"))
        if path.stem not in ("manifest", "labels")
    }
    runs = []
    for number, story in enumerate(RUNS):
        run = dict(story)
        for index, (name, tools) in enumerate(sorted(lists.items())):
            shown = tools if number < 2 or index % 3 else tools[: max(1, len(tools) - 1)]
            if (index + number) % 7 == 0:
                run[f"real/{name}"] = failed(Outcome.TIMEOUT, "timed out after 10 s")
            elif (index + number) % 11 == 0:
                run[f"real/{name}"] = failed(Outcome.AUTH_REQUIRED, "401")
            else:
                run[f"real/{name}"] = ok(shown, name, f"1.{number}.0")
        runs.append(run)
    return runs


def site_digests(store: Store, out: Path) -> dict[str, str]:
    """The sha256 of every file of the site of the newest run and of run 2, by path."""
    digests = {}
    for run_id in (None, 2):
        site = out / f"run-{run_id or 'newest'}"
        build_report(store, site, run_id=run_id, now=FIXED_NOW)
        for path in sorted(site.rglob("*")):
            if path.is_file():
                digests[path.relative_to(out).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def test_the_whole_site_is_unchanged(
    make_store: Callable[[Sequence[dict[str, ScanOutcome]]], Store], tmp_path: Path
) -> None:
    got = site_digests(make_store(real_runs()), tmp_path / "site")
    if os.environ.get("FATHOM_UPDATE_SNAPSHOTS") == "1":
        DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(DIGESTS.read_text(encoding="utf-8"))
    changed = sorted(name for name in expected.keys() & got.keys() if expected[name] != got[name])
    assert not changed, f"{len(changed)} files differ from the snapshot, e.g. {changed[:5]}"
    assert sorted(got) == sorted(expected), "the site's list of files changed"
    assert len(got) > 150  # both builds: pages of the 28 servers, badges, exports, health
