"""Failures that say what to do: reasons grouped so a registry's hundreds of alike failures are a few lines, and the
next step for each outcome as a command or a variable name."""

from __future__ import annotations

from datetime import UTC, datetime

from scanner.report.data import FailureGroup, Leaderboard, ServerRow
from scanner.report.nextstep import next_step, reason_group, skip_reason


def _row(name: str, outcome: str, detail: str) -> ServerRow:
    return ServerRow(
        name=name,
        slug=name,
        outcome=outcome,
        detail=detail,
        rank=None,
        movement="unranked",
        moved_by=0,
        score=None,
        tools_count=None,
        tokens={},
        problems=0,
        warnings=0,
        notes=0,
        toolset_sha256=None,
    )


def test_two_hundred_alike_failures_are_one_line_with_a_count() -> None:
    rows = [_row(f"ai.smithery/s{i}", "connect_error", "server.smithery.ai did not resolve") for i in range(210)]
    rows += [_row("x", "connect_error", "connection refused")]
    skipped = [_row(f"p{i}", "skipped", f"package (npm @scope/p{i} 1.0.{i}): needs --run-packages") for i in range(40)]
    skipped += [
        _row("b", "skipped", "mcpb bundles are not run (https://x.test/b.mcpb)"),
        _row("n", "skipped", "nuget packages are not run (Foo.Bar)"),
        _row("r", "skipped", "no remote and no package to run"),
    ]
    board = Leaderboard(
        run_id=1,
        started_at=datetime(2026, 3, 1, tzinfo=UTC),
        finished_at=None,
        rule_version="4",
        score_version="1",
        score_formula="",
        previous_run_id=None,
        providers=(),
        ranked=(),
        unranked=tuple(rows + skipped),
    )
    groups = {group.key: group for group in board.failure_groups}
    unreachable: FailureGroup = groups["unreachable"]
    assert [(reason.label, len(reason.rows)) for reason in unreachable.reasons] == [
        ("server.smithery.ai did not resolve", 210),
        ("connection refused", 1),
    ]
    assert [(reason.key, len(reason.rows)) for reason in groups["skipped"].reasons] == [
        ("run_packages", 40),
        ("bundle", 1),
        ("no_remote", 1),
        ("nuget", 1),
    ]


def test_skip_reasons_of_the_registry_dump() -> None:
    assert skip_reason("package (npm a 1.0): needs --run-packages")[0] == "run_packages"
    assert skip_reason("mcpb bundles are not run (x)")[0] == "bundle"
    assert skip_reason("nuget packages are not run (x)")[0] == "nuget"
    assert skip_reason("package serves streamable-http on a local port (x)")[0] == "local_port"
    assert skip_reason("registry data: runtime argument (x) is not one of the uvx options")[0] == "registry_data"
    assert skip_reason("something new")[0] == "other"
    assert reason_group("timeout", "no answer within 30 s (request 123456789)")[1] == "no answer within 30 s …"


def test_next_steps_name_the_variable_or_the_flag() -> None:
    auth = next_step("ai.smithery/smithery-toolbox", "auth_required", "401")
    assert "FATHOM_SECRET_AI_SMITHERY_SMITHERY_TOOLBOX_AUTHORIZATION" in auth
    assert "--run-packages" in next_step("p", "skipped", "package (npm p 1.0): needs --run-packages")
    assert "--timeout" in next_step("t", "timeout", "no answer")
    named = "needs configuration: --api-key needs a value (set FATHOM_SECRET_A_B_API_KEY)"
    assert next_step("a/b", "needs_configuration", named) == "Set FATHOM_SECRET_A_B_API_KEY and scan again."
    assert "FATHOM_SECRET_A_B_API_KEY" in next_step(
        "a/b", "needs_configuration", "needs configuration: --api-key needs a value"
    )
    assert "--allow-private" in next_step("p", "refused", "refused: 10.0.0.1 is a private address")
    assert next_step("x", "some_new_outcome", "")  # never empty
