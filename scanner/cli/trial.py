"""``fathom try``: which tool a real model would call."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)
from scanner.errors import FathomError

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    pass
from scanner.cli.base import TransportChoice, _db_url, _fail, _headers, _seconds, _server_entry, app


class TryFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


@app.command("try", epilog=exitcodes.command_epilog("try"))
def try_model(
    model: Annotated[
        str,
        typer.Option(
            help="anthropic:MODEL, openai:MODEL, gemini:MODEL, or MODEL with --base-url for an OpenAI-compatible "
            "server (Ollama, llama.cpp, vLLM, LM Studio)."
        ),
    ],
    prompt: Annotated[
        str | None, typer.Option(help="What someone might ask an agent; without it (and --cases), standard input.")
    ] = None,
    cases: Annotated[
        str | None, typer.Option(help="A YAML or JSONL file of cases: prompt, the expected tool, expected values.")
    ] = None,
    tools_file: Annotated[
        str | None, typer.Option("--tools-file", "-f", help="A tool list file, as for check.", show_default=False)
    ] = None,
    url: Annotated[str | None, typer.Option(help="An MCP server URL to take the tool list from.")] = None,
    stdio: Annotated[str | None, typer.Option(help="A command that starts a stdio MCP server.")] = None,
    command: Annotated[list[str] | None, typer.Argument(help="Or the server command after '--'.")] = None,
    example: Annotated[bool, typer.Option("--example", help="Use the bundled example tool list.")] = False,
    db: Annotated[str | None, typer.Option(help="A database: take --server's newest stored tool list.")] = None,
    server: Annotated[str | None, typer.Option(help="The server's name in --db.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="The provider's base URL (a gateway, proxy or local server).")
    ] = None,
    key_env: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Send the key in this variable (a --base-url or compatible server gets none otherwise).",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Consent to sending to a remote provider.")] = False,
    repeat: Annotated[
        int, typer.Option(min=1, max=100, help="Ask each prompt this many times, to see how stable the choice is.")
    ] = 1,
    max_tokens: Annotated[int, typer.Option(min=1, max=1_000_000, help="Output limit of each answer.")] = 1024,
    timeout: Annotated[
        float,
        typer.Option(
            parser=_seconds, help="Deadline of each request to the provider, in seconds (above 0, at most 86400)."
        ),
    ] = 120.0,
    strict: Annotated[bool, typer.Option(help="Exit 1 when a case is missed (for CI).")] = False,
    fmt: Annotated[TryFormat, typer.Option("--format", help="Output format.")] = TryFormat.text,
    save: Annotated[Path | None, typer.Option(help="Save a transcript: requests (without keys) and answers.")] = None,
    header: Annotated[list[str] | None, typer.Option(help="An HTTP header 'Name: value' for the MCP server.")] = None,
    bearer_env: Annotated[str | None, typer.Option(help="Bearer token variable for the MCP server.")] = None,
) -> None:
    """Ask a real model which tool it would call for a prompt, with which arguments, at what cost.

    Nothing is called: each call is shown with its arguments checked against the tool's schema. The tools sent
    are exactly what `check --as PROVIDER` prints. A remote provider is asked for consent first (or --yes).
    Keys come from ANTHROPIC_API_KEY, OPENAI_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY; base URLs from --base-url,
    ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL. See docs/try.md.
    """
    from scanner import trial
    from scanner.check import CheckRequest

    sources = [tools_file is not None, url is not None, stdio is not None, bool(command), example, db is not None]
    if sum(sources) != 1:
        _fail("give exactly one tool list: --tools-file, --url, --stdio, '-- command ...', --example or --db", 2)
    if (db is None) != (server is None):
        _fail("--db and --server go together (the server whose newest stored tool list is tried)", 2)
    if example:
        from importlib import resources

        tools_file = str(resources.files("scanner") / "examples" / "example-tools.json")
    entry = _server_entry(url, stdio, command, TransportChoice.auto, _headers(header, bearer_env))
    try:
        request = trial.TrialRequest(
            target=trial.resolve(model, base_url, key_env=key_env),
            cases=_trial_cases(prompt, cases, tools_file == "-"),
            check=None if db else CheckRequest(tools_file=tools_file, entry=entry, measure=False),
            db_url=_db_url(db, existing=True) if db else None,
            server=server,
            repeat=repeat,
            max_tokens=max_tokens,
            limits=trial.Limits(timeout=timeout),
            save=save,
        )
        plan = trial.prepare(request)
        if plan.needs_consent and not yes:
            if not sys.stdin.isatty():
                _fail(f"{plan.consent_text} Pass --yes to send (no terminal to ask in).", 2)
            typer.echo(plan.consent_text, err=True)
            if not typer.confirm("Send?", default=False, err=True):
                _fail("nothing was sent", 2)
        report = trial.run(plan)
    except FathomError as exc:
        _fail(str(exc), exc.exit_code)
    render = {TryFormat.json: trial.render_json, TryFormat.markdown: trial.render_markdown}
    typer.echo(render.get(fmt, trial.render_text)(report), nl=False)
    if strict and any(summary.missed for summary in report.summaries):
        raise typer.Exit(1)


def _trial_cases(prompt: str | None, cases: str | None, stdin_taken: bool) -> tuple[Any, ...]:
    from scanner.errors import InputError
    from scanner.trial import Case, load_cases
    from scanner.trial.cases import read_cases

    if prompt is not None and cases is not None:
        raise InputError("give --prompt or --cases, not both")
    if cases is not None:
        return tuple(load_cases(cases, read_cases(cases)))
    if prompt is None:
        if stdin_taken or sys.stdin.isatty():
            raise InputError("give --prompt TEXT, --cases FILE, or pipe the prompt on standard input")
        from scanner import wire

        prompt = wire.decode_bytes(sys.stdin.buffer.read(1 << 20))
    if not prompt.strip():
        raise InputError("the prompt is empty")
    return (Case(name="prompt", prompt=prompt.strip()),)
