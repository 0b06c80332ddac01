"""Finding and reading ``[tool.fathom]`` / ``fathom.toml``, and flags over the file over the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.check.config import find_config, load_config, settings
from scanner.check.gates import Increase, TokenLimit
from scanner.errors import InputError
from scanner.models import Severity


def test_nearest_config_wins_and_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "fathom.toml").write_text('fail-on = "note"\n', encoding="utf-8")
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert find_config(deep) == tmp_path / "fathom.toml"
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.fathom]\nfail-on = "warning"\n', encoding="utf-8")
    assert find_config(deep) == tmp_path / "a" / "pyproject.toml"
    (tmp_path / "a" / "fathom.toml").write_text('fail-on = "problem"\n', encoding="utf-8")
    assert find_config(deep) == tmp_path / "a" / "fathom.toml"  # fathom.toml first in one folder
    assert load_config(start=deep).fail_on is Severity.PROBLEM


def test_every_key_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        """[tool.fathom]
select = ["mcp2", "MCP1"]
ignore = "MCP209"
format = "sarif"
fail-on = "warning"
min-score = 85
max-tokens = { openai = 5000, anthropic = 7000 }
max-increase = 250
baseline = "ci/base.json"
preview = true

[[tool.fathom.per-tool-ignores]]
tool = "search"
reason = "  fine  "
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.select == ("MCP2", "MCP1") and config.ignore == ("MCP209",)
    assert config.format == "sarif" and config.fail_on is Severity.WARNING and config.min_score == 85
    assert config.max_tokens == (TokenLimit(5000, "openai"), TokenLimit(7000, "anthropic"))
    assert config.max_increase == Increase(250, percent=False)
    assert config.baseline == tmp_path / "ci" / "base.json"
    assert config.preview is True and settings(config).preview is True
    (ignore,) = config.tool_ignores
    assert (ignore.tool, ignore.rules, ignore.reason) == ("search", (), "fine")


def test_flags_win_over_the_file() -> None:
    from scanner.check.config import CheckConfig

    config = CheckConfig(
        select=("MCP2",),
        ignore=("MCP209",),
        format="json",
        fail_on=Severity.NOTE,
        min_score=90,
        max_tokens=(TokenLimit(10),),
        max_increase=Increase(5, True),
        baseline=Path("b.json"),
    )
    kept = settings(config)
    assert kept.select == ("MCP2",) and kept.format == "json" and kept.gates.fail_on is Severity.NOTE
    assert kept.gates.max_tokens == (TokenLimit(10),) and kept.baseline == Path("b.json")
    flagged = settings(
        config,
        select=["MCP1"],
        ignore=["MCP103"],
        fmt="text",
        strict=True,
        min_score=10,
        max_tokens=["openai=3"],
        max_increase="1%",
        baseline=Path("c.json"),
    )
    assert flagged.select == ("MCP1",) and flagged.ignore == ("MCP103",) and flagged.format == "text"
    assert flagged.gates.fail_on is Severity.PROBLEM  # --strict is a flag: it wins over the file's note
    assert flagged.gates.min_score == 10 and flagged.gates.max_tokens == (TokenLimit(3, "openai"),)
    assert flagged.gates.max_increase == Increase(1, True) and flagged.baseline == Path("c.json")
    assert settings(config, strict=True, fail_on="warning").gates.fail_on is Severity.WARNING
    assert not kept.preview and settings(config, preview=True).preview  # --preview, or preview = true
    assert settings(load_config(start=Path("/"))).format == "text"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fail-on = 3\n", "is not one of problem, warning, note"),
        ('format = "html"\n', "format 'html' is not one of"),
        ("min-score = 101\n", "not a number from 0 to 100"),
        ('max-tokens = "lots"\n', "must be a number of tokens"),
        ("max-tokens = { claude = 3 }\n", "no provider 'claude'"),
        ('max-increase = "ten%"\n', "neither a percentage"),
        ("select = [1]\n", "must be a list of strings"),
        ('[[per-tool-ignores]]\ntool = "x"\nreason = ""\n', "needs a reason"),
        ('[[per-tool-ignores]]\nreason = "r"\n', "needs the tool's name"),
        ('[[per-tool-ignores]]\ntool = "x"\nreason = "r"\nrule = ["MCP1"]\n', "unknown key 'rule'"),
        ("fail-on = \n", "is not valid TOML"),
        ('preview = "yes"\n', "preview must be true or false"),
        ("openai-strict = 1\n", "openai-strict must be true or false"),
    ],
)
def test_a_bad_config_is_an_input_error(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "fathom.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=None) as caught:
        load_config(path)
    assert fragment in str(caught.value)


def test_an_explicit_pyproject_must_hold_the_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"no \[tool.fathom\] table"):
        load_config(path)
    with pytest.raises(InputError, match="--config"):
        load_config(tmp_path / "missing.toml")
