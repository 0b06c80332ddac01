"""``fathom report`` writes its site atomically (issue 33 item 5): the pages are built in a hidden folder inside the
output folder and renamed into place with ``index.html`` last, so a build that fails or is killed at any moment
never leaves an index linking a page that is missing or half written.

The failures are real ones made to happen: a page whose write fails (``ENOSPC``) in the middle of the server
pages, and a build stopped between two renames of the publishing step."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scanner.errors import OutputError
from scanner.report import build, build_report, html
from scanner.store import Store

FIRST = datetime(2026, 3, 10, tzinfo=UTC)
SECOND = datetime(2026, 3, 11, tzinfo=UTC)


def links(page: Path) -> set[str]:
    found = re.findall(r'(?:href|src)="([^"#?]+)', page.read_text(encoding="utf-8"))
    return {link for link in found if "://" not in link and not link.startswith(("mailto:", "data:"))}


def assert_whole(out: Path, *, every_page: bool = True) -> None:
    """Every local link of the index (and, for a site written whole, of every top-level page) resolves to a file,
    and no build folder is left behind."""
    for page in out.glob("*.html") if every_page else [out / "index.html"]:
        missing = sorted(link for link in links(page) if not (out / link).is_file())
        assert not missing, f"{page.name} links missing files: {missing[:5]}"
    assert not list(out.glob(".fathom-build-*"))


def failing_pages(after: int) -> Any:
    real = html.render_pages

    def pages(site: Any, env: Any = None) -> Iterator[tuple[str, str]]:
        for number, item in enumerate(real(site, env)):
            if number == after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            yield item

    return pages


def test_a_page_write_failing_leaves_the_old_site_whole(
    story_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    build_report(story_store, out, now=FIRST)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    assert len([path for path in before if path.parent.name == "servers"]) >= 2
    monkeypatch.setattr(html, "render_pages", failing_pages(after=4))  # index, trends, rules, one server page
    with pytest.raises(OutputError, match="No space left on device"):
        build_report(story_store, out, now=SECOND)
    after = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    assert after == before  # nothing of the failed build reached the site
    assert_whole(out)


def test_a_first_build_that_fails_leaves_no_index(
    story_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    monkeypatch.setattr(html, "render_pages", failing_pages(after=4))
    with pytest.raises(OutputError):
        build_report(story_store, out, now=FIRST)
    assert not (out / "index.html").exists() and list(out.iterdir()) == []


@pytest.mark.parametrize("stop_after", [1, 5, -2, -1])
def test_a_build_killed_while_publishing_never_has_an_index_linking_a_missing_page(
    story_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_after: int
) -> None:
    out = tmp_path / "site"
    total = len(build_report(story_store, tmp_path / "once", now=FIRST).paths)
    out.mkdir()  # a site of an older fathom: its index links only its own page; the new build brings the rest
    (out / "index.html").write_text("<a href='old.html'>old</a>", encoding="utf-8")
    (out / "old.html").write_text("<p>old</p>", encoding="utf-8")
    limit = stop_after if stop_after > 0 else total + stop_after
    renamed: list[str] = []
    real_replace = os.replace

    def replace(source: Any, target: Any) -> None:
        if len(renamed) == limit:
            raise KeyboardInterrupt  # the build stopped here, between two renames
        real_replace(source, target)
        renamed.append(str(target))

    monkeypatch.setattr(build.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        build_report(story_store, out, now=SECOND)
    assert not renamed[-1:] or not renamed[-1].endswith("index.html")  # the index comes last, if at all
    # The index a reader opens links only pages that are there; the new pages already in place are whole files
    # (each arrived by one rename), they just wait for the index that links them.
    assert_whole(out, every_page=False)
    assert (out / "index.html").read_text(encoding="utf-8") == "<a href='old.html'>old</a>"
    monkeypatch.setattr(build.os, "replace", real_replace)
    build_report(story_store, out, now=FIRST)  # the next build completes the site
    assert (out / "index.html").read_bytes() == (tmp_path / "once" / "index.html").read_bytes()
    assert_whole(out)


def test_a_build_folder_left_by_a_killed_build_is_removed(story_store: Store, tmp_path: Path) -> None:
    out = tmp_path / "site"
    left = out / ".fathom-build-999999999-abc"  # no such process
    (left / "servers").mkdir(parents=True)
    (left / "servers" / "half.html").write_text("<html", encoding="utf-8")
    build_report(story_store, out, now=FIRST)
    assert not left.exists()
    assert_whole(out)
