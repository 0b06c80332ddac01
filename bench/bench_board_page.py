"""Benchmark the leaderboard page of a registry-sized site in headless Chromium (not a test).

    python bench/bench_report.py --runs 2 --servers 20000 --out artifacts/bench-board/site   # build the site
    python bench/bench_board_page.py artifacts/bench-board/site                              # measure its page

Prints the size of ``index.html`` (raw and gzipped, as a static host would send it), then opens it from
``file://`` at 1400 px in headless Chromium (the suite's driver, ``tests/report/chromium_cdp.py``) several times
and reports the navigation timings (DOM interactive; DOMContentLoaded done, which includes ``board.js``, a
parser-blocking script at the end of the body, so the controls work from then on; load) and the time of one
filter (picking an outcome: every row re-tested), one search keystroke's filter, and one sort (clicking a
column: every row re-appended), each measured inside the page around the synchronous handler.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.report.chromium_cdp import Chromium, find_chromium  # noqa: E402

TIMINGS = (
    "(() => { const n = performance.getEntriesByType('navigation')[0];"
    " return [n.domInteractive, n.domContentLoadedEventEnd, n.loadEventEnd,"
    " document.querySelectorAll('#board tbody tr').length, document.getElementById('filters').hidden]; })()"
)
FILTER = (
    "(() => { const s = document.getElementById('f-outcome'); s.value = 'timeout';"
    " const t = performance.now(); s.dispatchEvent(new Event('change')); const f = performance.now() - t;"
    " s.value = ''; s.dispatchEvent(new Event('change'));"
    " const r = document.getElementById('f-rule'); r.value = r.options[1] ? r.options[1].value : '';"
    " const u = performance.now(); r.dispatchEvent(new Event('change')); const g = performance.now() - u;"
    " const b = document.querySelector('#board th[data-key=\"3\"] button');"
    " const v = performance.now(); b.click(); const h = performance.now() - v;"
    " void document.body.offsetHeight; return [f, g, h, performance.now() - v]; })()"
)


def _metrics(browser: Chromium, page: Path) -> str:
    """Main-thread durations Chromium itself accounts for one load (Performance.getMetrics), in seconds."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    browser.call("Performance.enable", session=session)
    browser.call("Page.enable", session=session)
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.send("Page.navigate", {"url": page.as_uri()}, session)
    browser._wait(
        lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session,
        [],
        time.monotonic() + browser.timeout,
    )
    values = {m["name"]: m["value"] for m in browser.call("Performance.getMetrics", session=session)["metrics"]}
    browser.call("Target.closeTarget", {"targetId": target})
    names = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
    return ", ".join(f"{name} {values.get(name, 0):.1f}" for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, nargs="?", default=ROOT / "artifacts" / "bench-board" / "site")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    page = (args.site / "index.html").resolve()
    data = page.read_bytes()
    print(f"index.html: {len(data) / 1e6:.1f} MB raw, {len(gzip.compress(data)) / 1e6:.2f} MB gzipped")
    binary = find_chromium()
    if binary is None:
        sys.exit("no chromium binary")
    loads: list[list[float]] = []
    actions: list[list[float]] = []
    with Chromium(binary, timeout=120.0) as browser:
        for _ in range(args.repeat):
            report = browser.open(page.as_uri(), width=1400, probe=TIMINGS)
            assert report.errors == [], report.errors
            interactive, loaded, done, rows, hidden = report.probe
            assert not hidden, "board.js did not run"
            print("main-thread work of that load:", _metrics(browser, page))
            loads.append([interactive, loaded, done])
            measured = browser.open(page.as_uri(), width=1400, probe=FILTER)
            actions.append(list(measured.probe))
    print(f"rows in the ranked table: {rows:,}")
    for index, name in enumerate(("DOM interactive", "DOMContentLoaded done (script ran)", "load")):
        print(f"{name:38s} median {statistics.median(row[index] for row in loads):8.0f} ms")
    for index, name in enumerate(("filter by outcome", "filter by rule", "sort by score", "sort incl. layout")):
        print(f"{name:38s} median {statistics.median(row[index] for row in actions):8.0f} ms")


if __name__ == "__main__":
    main()
