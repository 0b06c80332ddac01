"""``try``'s pattern limit has a total (issue 33, low item): a thousand values that each stayed under the
per-value limit took 45 s to check; now all the patterns of one answer share
:data:`~scanner.trial.validate.PATTERN_TOTAL_SECONDS`, and the call says its schema could not be checked."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scanner.cli import app
from scanner.trial.validate import PATTERN_SECONDS, PATTERN_TOTAL_SECONDS, SchemaUnusable, check_arguments
from tests.trial.stub import Stub

pytestmark = pytest.mark.timeout(300)
# About 0.1 s a value on the regex module (catastrophic backtracking on a value that ends in "!"): under the
# per-value limit, so only a total stops a list of them.
PATTERN = "^(a|a)*$"
VALUE = "a" * 18 + "!"
SCHEMA = {"type": "object", "properties": {"q": {"type": "array", "items": {"type": "string", "pattern": PATTERN}}}}


def test_many_slow_values_stop_at_the_total() -> None:
    started = time.monotonic()
    with pytest.raises(SchemaUnusable, match=f"took over {PATTERN_TOTAL_SECONDS:g} s in total"):
        check_arguments(SCHEMA, {"q": [VALUE] * 400})
    # 400 values at ~0.1 s are ~40 s without a total; the bound is generous for a loaded machine.
    assert time.monotonic() - started < 10 * PATTERN_TOTAL_SECONDS
    assert PATTERN_TOTAL_SECONDS > PATTERN_SECONDS
    assert check_arguments(SCHEMA, {"q": ["aaa"] * 400}) == ()  # fast values are checked as before


def test_an_answers_calls_share_one_total(stub: Stub, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [{"name": "find", "inputSchema": SCHEMA}]}), encoding="utf-8")
    arguments = json.dumps({"q": [VALUE] * 40})  # ~4 s a call, 20 calls
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": "find", "arguments": arguments}} for n in range(20)
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    stub.reply(200, {"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": {}})
    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        ["try", "--model", "m", "--base-url", stub.url + "/v1", "-f", str(tools), "--prompt", "x", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 60  # ~80 s without one total for the answer
    (trial,) = json.loads(result.stdout)["trials"]
    problems = [call["schema_problem"] for call in trial["calls"]]
    assert all(problem and "in total" in problem for problem in problems[1:]), problems
