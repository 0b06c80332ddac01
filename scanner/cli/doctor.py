"""``fathom doctor``: which lane a configuration is in."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated

import typer

from scanner import exitcodes  # the one table of exit codes (a light module)

if TYPE_CHECKING:  # annotations only: the CLI imports what a command needs when it runs
    pass
from scanner.cli.base import _fail, _headers, _known_profile, _seconds, _table_width, app


class DoctorFormat(enum.StrEnum):
    text = "text"
    json = "json"


@app.command(epilog=exitcodes.command_epilog("doctor"))
def doctor(
    config: Annotated[
        str | None,
        typer.Argument(help="A client config file (Claude Desktop, VS Code mcp.json): every HTTP server in it."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="One MCP server URL.")] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(help="A header 'Name: value' (repeatable); together they form one credential lane."),
    ] = None,
    bearer_env: Annotated[
        list[str] | None,
        typer.Option(
            help="A lane that sends 'Authorization: Bearer <token>' with the token from this environment variable "
            "(repeatable: one lane each; the value is never printed)."
        ),
    ] = None,
    fmt: Annotated[DoctorFormat, typer.Option("--format", help="Output format.")] = DoctorFormat.text,
    timeout: Annotated[
        float,
        typer.Option(parser=_seconds, help="Deadline for each lane's connection, in seconds (above 0, at most 86400)."),
    ] = 30.0,
    connect_timeout: Annotated[
        float, typer.Option(parser=_seconds, help="Deadline to connect, in seconds (above 0, at most 86400).")
    ] = 10.0,
    profile: Annotated[str, typer.Option(help="Client-capability profile: rich, full or bare.")] = "rich",
) -> None:
    """Say which lane a configuration is in: what a server lists without a credential and with each one given.

    Connects once without a credential and once per credential (--bearer-env, the --header set, the headers the
    config file holds), collects the auth signals a caller without one gets (status, WWW-Authenticate, RFC 9728
    protected-resource metadata, the authorization server's metadata), and explains the difference. Never calls
    a tool. See docs/lanes.md.
    """
    from scanner.mcp import ClientLimits
    from scanner.models import ServerEntry, Transport
    from scanner.report import doctor_out
    from scanner.scan.doctor import Credential, DoctorRequest, run_doctor

    if config is None and url is None:
        _fail("give a client config file (fathom doctor claude_desktop_config.json) or --url URL", 2)
    if config is not None and url is not None:
        _fail("give a client config file or --url, not both", 2)
    credentials = [Credential(name, _headers(None, name)) for name in bearer_env or ()]
    if header:
        credentials.append(Credential("--header", _headers(header, None)))
    if url is not None:
        entries = [ServerEntry(name=url, transport=Transport.HTTP, url=url, source="command line")]
    else:
        from scanner.registry import load_entries

        assert config is not None
        entries = load_entries(config)
    request = DoctorRequest(
        entries=entries,
        credentials=credentials,
        limits=ClientLimits(timeout=timeout, connect_timeout=connect_timeout),
        profile=_known_profile(profile),
    )
    diagnoses = run_doctor(request)
    if fmt is DoctorFormat.json:
        typer.echo(doctor_out.render_json(diagnoses), nl=False)
    else:
        typer.echo(doctor_out.render_text(diagnoses, width=_table_width()), nl=False)
    raise typer.Exit(max((diagnosis.exit_code for diagnosis in diagnoses), default=0))
