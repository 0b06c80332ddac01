"""The options a run stores are derived from the scan's config: every setting, flattened, minus the documented
exclusions (where the run came from, the database URL, how the process started)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scanner.mcp.limits import ClientLimits
from scanner.packages.settings import PackageSettings
from scanner.scan.crawl import CrawlSettings
from scanner.scan.night import OPTIONS_EXCLUDED, ScanConfig, _flat_fields
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

    from scanner.scan.night import config_from_options

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


def test_a_resume_never_exceeds_the_opt_ins_of_its_command_line() -> None:
    from pathlib import Path

    from scanner.scan.night import within_opt_ins

    planted = ScanConfig(
        source="x.json",
        run_packages=True,
        run_commands=True,
        memory_limit_mb=65536,
        crawl=CrawlSettings(
            allow_private=True,
            packages=PackageSettings(cache_dir=Path("/etc"), disk_limit_mb=1 << 20, pass_env=("AWS_SECRET", "PROXY")),
        ),
    )
    given = ScanConfig(source=None, resume=True, crawl=CrawlSettings(packages=PackageSettings(pass_env=("PROXY",))))
    capped, notes = within_opt_ins(planted, given)
    assert (capped.run_packages, capped.run_commands, capped.crawl.allow_private) == (False, False, False)
    assert capped.crawl.packages.pass_env == ("PROXY",) and capped.crawl.packages.cache_dir is None
    assert capped.memory_limit_mb == 1024 and capped.crawl.packages.disk_limit_mb == 4096
    assert len(notes) == 7 and any("--run-commands" in note for note in notes)
    # What both allow stays: a resume with the same flags is the run as it was.
    same, notes = within_opt_ins(planted, planted)
    assert same == planted and notes == []


def test_a_planted_run_row_cannot_run_a_command_on_resume(tmp_path: Path) -> None:
    """Issue 17 (4): ``fathom scan --resume --db DB`` ran the commands and opt-ins a run row planted in the
    database chose."""
    import json
    import sys

    from scanner.scan.night import run_scan
    from scanner.store import open_store

    marker = tmp_path / "pwned"
    listing = tmp_path / "servers.json"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    listing.write_text(json.dumps({"servers": [{"name": "planted", "command": command}]}), encoding="utf-8")
    db_url = f"sqlite:///{tmp_path / 'f.db'}"
    planted = ScanConfig(source=str(listing), db_url=db_url, run_commands=True)
    with open_store(db_url) as store:
        run_id = store.start_run(str(listing), "1", planted.options())
        store.finish_run(run_id, "interrupted")
    warnings: list[str] = []
    summary = run_scan(ScanConfig(source=None, db_url=db_url, resume=True), on_warning=warnings.append)
    assert summary.counts == {"skipped": 1}
    assert not marker.exists()
    assert any("the run had --run-commands; this command line does not" in line for line in warnings)
