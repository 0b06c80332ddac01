"""One registry entry can never take over another server's page (issue 8, item 8).

A server named exactly like another's slug (``acme-tool-b4c750b9`` beside ``Acme/Tool``) used to write the same
file, so the victim's link opened the attacker's page; ``con`` or ``nul`` became Windows device names. Slugs now
never let a name keep itself when it looks hashed or reserved, a build settles crafted 32-bit hash matches with
the whole SHA-256, and the page writer refuses to overwrite a page of the same build.
"""

from __future__ import annotations

import functools
import hashlib
import html
import itertools
import re
from pathlib import Path

import pytest

from scanner.errors import InputError
from scanner.measure.toollist import measure
from scanner.report import build_report
from scanner.report.text import RESERVED_NAMES, is_reserved_name, slugify, unique_slugs
from scanner.rules.registry import RULES_VERSION
from scanner.store import open_store

from .conftest import ALPHA, DELTA, entry, ok

SEPARATORS = " /.!#$%&()*+,:;<=>?@[]^{|}~"


@functools.cache
def crafted_collision() -> tuple[str, str]:
    """Two names that fold to ``acme-tool`` and share the first 8 hex digits of their SHA-256 (so the same short
    slug): what an attacker can find in well under a second, by the birthday bound."""
    seen: dict[str, str] = {}
    for length in itertools.count(1):
        for middle in itertools.product(SEPARATORS, repeat=length):
            name = "Acme" + "".join(middle) + "Tool"
            prefix = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
            if prefix in seen:
                return seen[prefix], name
            seen[prefix] = name
    raise AssertionError("unreachable")


def test_a_name_shaped_like_another_names_slug_does_not_keep_itself() -> None:
    victim = slugify("Acme/Tool")
    assert re.fullmatch(r"acme-tool-[0-9a-f]{8}", victim)
    assert slugify(victim) != victim  # the attacker's literal name is hashed too
    assert slugify("plain-name") == "plain-name" and slugify("release-2024") == "release-2024"


@pytest.mark.parametrize(
    "name", ["con", "CON", "Nul", "aux", "prn.txt", "com1", "COM9", "lpt1", "LPT9.html", "nul.tar.gz"]
)
def test_reserved_device_names_never_become_a_file_name(name: str) -> None:
    slug = slugify(name)
    assert not is_reserved_name(slug) and not is_reserved_name(f"{slug}.html")
    assert slug.split("-")[0] in RESERVED_NAMES  # still recognisable, with its hash after it


def test_a_build_gives_crafted_short_hash_twins_the_whole_hash() -> None:
    first, second = crafted_collision()
    assert slugify(first) == slugify(second)  # the attack: one page for two servers

    slugs = unique_slugs(["Acme/Tool", first, second, "alpha"])

    assert slugs[first] != slugs[second]
    assert slugs[first] == f"acme-tool-{hashlib.sha256(first.encode()).hexdigest()}"
    assert slugs["Acme/Tool"] == slugify("Acme/Tool") and slugs["alpha"] == "alpha"  # the others keep theirs


def test_a_build_refuses_names_it_cannot_tell_apart() -> None:
    class Twin(str):
        """Two distinct objects with one text: the last resort must refuse, not overwrite."""

        def __hash__(self) -> int:
            return id(self)

        def __eq__(self, other: object) -> bool:
            return self is other

    with pytest.raises(InputError, match=r"would share the page .+\.html; the report refuses to overwrite"):
        unique_slugs([Twin("same"), Twin("same")])


def test_one_report_build_keeps_every_servers_page_its_own(tmp_path: Path) -> None:
    victim = "Acme/Tool"
    impostor = slugify(victim)  # a server literally named like the victim's page
    first, second = crafted_collision()
    names = [victim, impostor, first, second, "con", "NUL"]
    with open_store(f"sqlite:///{tmp_path / 'f.db'}") as store:
        run_id = store.start_run("slugs", RULES_VERSION, {})
        for index, name in enumerate(names):
            tools = ALPHA if index % 2 == 0 else DELTA
            store.record_scan(run_id, entry(name), ok(tools, name), measure)
        store.finish_run(run_id)
        result = build_report(store, tmp_path / "site", run_id=run_id)

    pages = sorted((tmp_path / "site" / "servers").glob("*.html"))
    assert result.server_pages == len(names) == len(pages)
    titles = {}
    for page in pages:
        assert not is_reserved_name(page.name)
        match = re.search(r"<h1>(.*?)</h1>", page.read_text(encoding="utf-8"), re.S)
        assert match is not None
        titles[html.unescape(match.group(1))] = page.name
    assert set(titles) == set(names)  # each server has a page of its own, none overwritten
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    for name, page_name in titles.items():
        link = f'<a href="servers/{page_name}">{html.escape(name, quote=True)}</a>'
        assert link in index.replace("&#39;", "'").replace("&#34;", '"'), name  # each link opens its own page
