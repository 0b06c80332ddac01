"""The catalogue's written forms stay true to the registry: docs/rules.md is generated from it and current,
`fathom rules`/`fathom rule` show each rule's status, and every catalogue version names one exact catalogue."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from scanner.cli import app
from scanner.rules import RULES, RULES_VERSION
from scanner.rules.catalogue import markdown
from scanner.rules.registry import STATUSES, catalogue_digest

DOC = Path(__file__).parent.parent.parent / "docs" / "rules.md"

# One line per catalogue version, never edited: changing a rule (its text, severity, status or check function)
# changes the digest, and this fails until RULES_VERSION is bumped and a line is added for the new version.
DIGESTS = {
    "2": "cdae6a2fafa20db48f0cc447076124c4d0b6b8c31caf6a0588ca85b05dffc79c",
    "3": "26a23349ad9f1a7b2a85a81e167a12fd6b2fd4270253d57c6d4702783af99ec5",
    "4": "794ad37bc6b084d618762734566526b3c881e1d970357ad25615ebb0da80f662",  # v4 with MCP701-705
    "5": "1c3bb2e61d4efe4fba9e18b4a7c4f38e6b34c801332753867130658ac8389c97",  # catalogue 5 (rules.md), MCP801-807
    "6": "230047a0d192f31dc2978c02d3f86099f082e0802057963f7c218722da8cfe34",  # catalogue 6 (both halves)
}


def test_docs_rules_md_is_generated_from_the_registry() -> None:
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/rules.md is stale: run `python -m scanner.rules.catalogue > docs/rules.md`"
    )
    text = DOC.read_text(encoding="utf-8")
    for rule in RULES.values():
        assert f"### {rule.code}" in text and rule.slug in text


def test_catalogue_digest_is_tied_to_its_version() -> None:
    digest = catalogue_digest()
    assert DIGESTS.get(RULES_VERSION) == digest, (
        f"the rule catalogue changed (digest {digest}) but RULES_VERSION is still {RULES_VERSION!r}: bump it, "
        "add a DIGESTS line for the new version, and say in the change that `fathom rescore` re-scores history"
    )
    assert len(set(DIGESTS.values())) == len(DIGESTS), "two versions cannot name the same catalogue"


def test_digest_moves_when_a_rule_changes(monkeypatch: object) -> None:
    import dataclasses

    from scanner.rules import registry

    before = catalogue_digest()
    catalogue = registry.RULES
    assert isinstance(catalogue, registry._Catalogue)
    original = catalogue._rules["MCP205"]
    catalogue._rules["MCP205"] = dataclasses.replace(original, hint=original.hint + " ")
    try:
        assert catalogue_digest() != before
    finally:
        catalogue._rules["MCP205"] = original
    assert catalogue_digest() == before


def test_rules_and_rule_show_the_status() -> None:
    runner = CliRunner()
    listing = runner.invoke(app, ["rules"])
    assert listing.exit_code == 0
    lines = [line for line in listing.output.splitlines() if line.startswith("MCP")]  # under the table's header
    assert len(lines) == len(RULES)
    for line, rule in zip(lines, RULES.values(), strict=True):
        assert line.split()[:4] == [rule.code, rule.severity.label, rule.status, rule.slug]
        assert rule.status in STATUSES
    assert RULES["MCP218"].status == "preview" and RULES["MCP205"].status == "stable"
    one = runner.invoke(app, ["rule", "mcp218"])
    assert one.exit_code == 0 and one.output.startswith("MCP218 description-names-absent-parameter (warning, preview)")


def test_status_follows_measured_precision() -> None:
    """rules.md: a rule is stable only at 80 % precision or more on real lists; a measured rule under it is preview."""
    from scanner.rules.catalogue import precision

    measured = precision()
    assert measured["servers"] >= 20
    for code, entry in measured["rules"].items():
        if entry["precision"] is None:
            continue
        want = "stable" if entry["precision"] >= measured["stable_at"] else "preview"
        assert RULES[code].status == want, (code, entry)


def test_every_rule_firing_on_the_real_lists_is_labelled() -> None:
    """Issue 34: every rule that fires on the saved real lists has labels, and a stable rule at least 10 where the
    lists give that many (else every one of its findings)."""
    from scanner.rules.catalogue import precision

    for code, entry in precision()["rules"].items():
        if not entry["findings"]:
            continue
        assert entry["labelled"] >= 1, code
        if code in RULES and RULES[code].status == "stable":
            assert entry["labelled"] >= min(10, entry["findings"]), (code, entry)


def test_precision_json_is_what_the_labels_say() -> None:
    import subprocess
    import sys

    script = Path(__file__).parent.parent.parent / "scripts" / "precision.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
