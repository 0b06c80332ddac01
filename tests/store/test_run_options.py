"""The options a run stores are derived from the scan's config: every setting, flattened, minus the documented
exclusions (where the run came from, the database URL, how the process started)."""

from __future__ import annotations

import dataclasses

import pytest

from scanner.crawl import CrawlSettings
from scanner.mcp.limits import ClientLimits
from scanner.packages.settings import PackageSettings
from scanner.scan import OPTIONS_EXCLUDED, ScanConfig, _flat_fields
from scanner.store import Store

# The keys runs stored when the list was written by hand: each must still be stored, with the same meaning.
KEYS_BEFORE = {
    "kind",
    "updated_since",
    "run_packages",
    "memory_limit_mb",
    "allow_private",
    "concurrency",
    "per_host",
    "timeout",
    "retries",
    "profile",
}


def test_stored_options_are_every_setting_of_the_config(store: Store) -> None:
    config = ScanConfig(
        source="https://user:hunter2@registry.example/v0/servers",
        db_url="postgresql+psycopg://fathom:s3cret@db.example/fathom",
        kind="official",
        updated_since="2026-01-01",
        resume=True,
        crawl=CrawlSettings(concurrency=7, per_host=3, retries=1, allow_private=True, limits=ClientLimits(timeout=9.5)),
    )
    store.start_run(config.source, "1", config.options())
    stored = dict(store.runs()[0].options)

    assert stored.keys() >= KEYS_BEFORE
    assert stored["concurrency"] == 7 and stored["per_host"] == 3 and stored["retries"] == 1
    assert stored["timeout"] == 9.5 and stored["allow_private"] is True
    assert stored["kind"] == "official" and stored["updated_since"] == "2026-01-01"
    # Every field of the settings objects is there, unless excluded; nothing else is.
    every = {
        item.name
        for settings in (ScanConfig, CrawlSettings, ClientLimits, PackageSettings)
        for item in dataclasses.fields(settings)
        if item.name not in ("crawl", "limits", "packages")
    }
    assert stored.keys() == every - OPTIONS_EXCLUDED
    # No secret and no trace of the excluded fields.
    text = repr(stored)
    assert "s3cret" not in text and "hunter2" not in text and "db.example" not in text
    assert not OPTIONS_EXCLUDED & stored.keys()


def test_two_settings_with_one_name_are_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Inner:
        timeout: float = 1.0

    @dataclasses.dataclass(frozen=True)
    class Outer:
        timeout: float = 2.0
        inner: Inner = dataclasses.field(default_factory=Inner)

    with pytest.raises(ValueError, match="'timeout' is defined twice"):
        _flat_fields(Outer(), frozenset())


def test_resume_rebuilds_the_config_a_run_stored() -> None:
    from pathlib import Path

    from scanner.scan import config_from_options

    config = ScanConfig(
        source="servers.json",
        kind="list",
        run_packages=True,
        crawl=CrawlSettings(
            concurrency=3,
            limits=ClientLimits(timeout=120.0),
            packages=PackageSettings(cache_dir=Path("/var/cache/f"), disk_limit_mb=99, pass_env=("A", "B")),
        ),
    )
    stored = config.options()
    rebuilt, notes = config_from_options("servers.json", "sqlite:///x.db", stored)
    assert notes == []
    assert rebuilt == dataclasses.replace(config, db_url="sqlite:///x.db", resume=True)
    assert rebuilt.options() == stored
    # An older run that stored fewer settings: the default is used and said; an unknown one is said too.
    older = {key: value for key, value in stored.items() if key != "disk_limit_mb"} | {"gone": 1}
    _, notes = config_from_options("servers.json", "sqlite:///x.db", older)
    assert notes == [
        "the run stored no 'disk_limit_mb'; the default is used",
        "the run's option 'gone' is unknown to this version; ignored",
    ]
    # Given the command's config, a setting the run did not store takes the command's value, and says so.
    given = dataclasses.replace(config, crawl=CrawlSettings(packages=PackageSettings(disk_limit_mb=512)))
    rebuilt, notes = config_from_options("servers.json", "sqlite:///x.db", older, given)
    assert rebuilt.crawl.packages.disk_limit_mb == 512 and rebuilt.crawl.concurrency == 3
    assert notes[0] == "the run stored no 'disk_limit_mb'; this command's value is used"
