"""``fathom doctor``: what each credential sees of a server, and which lane a configuration is in.

A server may register its tools by scope: a member's token sees 14 tools, a caller without a credential 3, with a
success status and no error. A configuration that forgot its token then looks exactly like a working connection
that is missing most of the product. A tool count alone is not a diagnosis, so the doctor:

1. connects once per *lane*: without a credential, and once with each credential given (a ``--bearer-env``
   variable, the ``--header`` set, or the headers a client config file holds), listing the tools each sees;
2. collects the auth signals the server gives a caller without a credential: the status and ``WWW-Authenticate``
   challenge of an anonymous POST, RFC 9728 protected-resource metadata at the well-known URL (or where the
   challenge points, same origin only), and the authorization server's RFC 8414 / OpenID metadata where that
   document names one (never on an address more private than the server's own);
3. runs the lane rules (MCP601 ``silent-lane``, MCP602 ``auth-undiscoverable``) and says in plain words which lane
   the configuration is in and why.

Nothing here calls a tool, and no credential's value is ever part of a result: lanes are named by where the
credential came from (the variable's name, ``--header``, the config file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from scanner.mcp import ClientLimits, scan_server
from scanner.mcp.auth import fetch_metadata, parse_challenge, same_origin, well_known_urls
from scanner.models import Finding, Outcome, ScanOutcome, ServerEntry, Transport
from scanner.rules.lanes import lane_findings
from scanner.scrub import Scrubber

ANONYMOUS = "anonymous"
_PROBE_BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fathom-doctor", "version": "1"},
    },
}


@dataclass(frozen=True)
class Credential:
    """One way to authenticate: a label people recognise (never the value) and the headers it sends."""

    label: str
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Lane:
    """What one credential (or none) sees: the connection's outcome and the tool names listed."""

    label: str
    outcome: ScanOutcome
    tools: tuple[str, ...] = ()
    only_here: tuple[str, ...] = ()  # tools this lane lists that the anonymous lane does not

    @property
    def ok(self) -> bool:
        return self.outcome.ok


@dataclass(frozen=True)
class AuthSignals:
    """What the server tells a caller without a credential about authenticating."""

    status: int | None = None
    challenge: Mapping[str, Any] | None = None  # parsed WWW-Authenticate: {"scheme", "params"}
    resource_metadata_url: str | None = None
    resource_metadata: Mapping[str, Any] | None = None
    authorization_server_url: str | None = None
    authorization_server: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()  # why something was not fetched or not found

    @property
    def any_sign(self) -> bool:
        """Whether a client could learn that a credential exists: a challenge or protected-resource metadata."""
        return self.challenge is not None or self.resource_metadata is not None


@dataclass(frozen=True)
class Diagnosis:
    """The doctor's answer for one server."""

    server: str
    url: str
    configured: str  # the lane the configuration is in: a credential's label, or "anonymous"
    lanes: tuple[Lane, ...]
    signals: AuthSignals
    findings: tuple[Finding, ...]
    verdict: str  # healthy | not-compared | silent-lane | auth-undiscoverable | unreachable | not-http
    explanation: str

    @property
    def exit_code(self) -> int:
        return {"healthy": 0, "not-compared": 0, "unreachable": 3, "not-http": 0}.get(self.verdict, 1)


@dataclass(frozen=True)
class DoctorRequest:
    """What to diagnose: servers (each with the credential its configuration holds, if any) and extra lanes."""

    entries: Sequence[ServerEntry]
    credentials: Sequence[Credential] = ()
    limits: ClientLimits = field(default_factory=ClientLimits)
    profile: str = "rich"


def run_doctor(request: DoctorRequest) -> list[Diagnosis]:
    """Diagnose every entry in turn (a config file holds a handful of servers; each gets its lanes in turn)."""
    return [anyio.run(_diagnose, entry, request) for entry in request.entries]


async def _diagnose(entry: ServerEntry, request: DoctorRequest) -> Diagnosis:
    if entry.transport is Transport.STDIO or not entry.url:
        return Diagnosis(
            server=entry.name,
            url=entry.target(),
            configured=ANONYMOUS,
            lanes=(),
            signals=AuthSignals(),
            findings=(),
            verdict="not-http",
            explanation="a stdio server: it runs as the user, with no credential lanes to compare",
        )
    problem = _unusable_url(entry.url)
    if problem is not None:
        return Diagnosis(
            server=entry.name,
            url=entry.url,
            configured=ANONYMOUS,
            lanes=(),
            signals=AuthSignals(),
            findings=(),
            verdict="unreachable",
            explanation=f"the URL cannot be used: {problem}",
        )
    configured = Credential("the configuration's headers", dict(entry.headers)) if entry.headers else None
    credentials = [c for c in ((configured,) if configured else ()) + tuple(request.credentials) if c is not None]
    bare = ServerEntry(name=entry.name, transport=entry.transport, url=entry.url, source=entry.source)
    # One scrubber for the whole diagnosis: a server may echo one lane's credential in another lane's answer or
    # in what it tells a caller without one (its challenge, its metadata).
    scrubber = Scrubber.for_headers([credential.headers for credential in credentials])
    anonymous = await _lane(ANONYMOUS, bare, request, scrubber=scrubber)
    lanes = [anonymous] + [
        await _lane(credential.label, bare, request, credential.headers, scrubber) for credential in credentials
    ]
    lanes = [_with_difference(lane, anonymous) for lane in lanes]
    signals = scrub_signals(await probe_signals(entry.url, request.limits), scrubber)
    findings = lane_findings(lanes, signals)
    verdict = _verdict(lanes, findings)
    configured_label = configured.label if configured else ANONYMOUS
    # A --url has no configuration to place in a lane: the explanation starts with what each lane saw.
    from_file = entry.source != "command line"
    return Diagnosis(
        server=entry.name,
        url=entry.url,
        configured=configured_label,
        lanes=tuple(lanes),
        signals=signals,
        findings=tuple(findings),
        verdict=verdict,
        explanation=explain(configured_label if from_file else None, lanes, signals, verdict),
    )


def _unusable_url(url: str) -> str | None:
    """Why ``url`` cannot be connected to (a port out of range, a broken IPv6 literal), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        return str(exc)[:200]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host"
    return None


async def _lane(
    label: str,
    entry: ServerEntry,
    request: DoctorRequest,
    headers: Mapping[str, str] | None = None,
    scrubber: Scrubber | None = None,
) -> Lane:
    outcome = await scan_server(entry, request.limits, request.profile, extra_headers=headers)
    if scrubber is not None:
        outcome = scrubber.outcome(outcome)
    names = tuple(_tool_name(tool, index) for index, tool in enumerate(outcome.tools or ()))
    return Lane(label=label, outcome=outcome, tools=names)


def _tool_name(tool: Any, index: int) -> str:
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else f"#{index}"


def _with_difference(lane: Lane, anonymous: Lane) -> Lane:
    if lane is anonymous or not lane.ok:
        return lane
    seen = set(anonymous.tools) if anonymous.ok else set()
    only = tuple(name for name in lane.tools if name not in seen)
    return Lane(label=lane.label, outcome=lane.outcome, tools=lane.tools, only_here=only)


def _verdict(lanes: Sequence[Lane], findings: Sequence[Finding]) -> str:
    codes = {finding.code for finding in findings}
    if "MCP601" in codes:
        return "silent-lane"
    if "MCP602" in codes:
        return "auth-undiscoverable"
    if not any(lane.ok or lane.outcome.outcome is Outcome.AUTH_REQUIRED for lane in lanes):
        return "unreachable"
    if len(lanes) == 1 and lanes[0].ok:  # it answered, but no credential was given to compare it with
        return "not-compared"
    return "healthy"


def scrub_signals(signals: AuthSignals, scrubber: Scrubber) -> AuthSignals:
    """``signals`` with every secret the scrubber knows taken out of every text (a server may echo a credential
    in its challenge's ``error_description`` or its metadata)."""
    return replace(
        signals,
        challenge=scrubber.value(signals.challenge),
        resource_metadata_url=scrubber.value(signals.resource_metadata_url),
        resource_metadata=scrubber.value(signals.resource_metadata),
        authorization_server_url=scrubber.value(signals.authorization_server_url),
        authorization_server=scrubber.value(signals.authorization_server),
        notes=tuple(scrubber.value(list(signals.notes))),
    )


async def probe_signals(url: str, limits: ClientLimits) -> AuthSignals:
    """The auth signals a caller without a credential gets: one anonymous POST, then the metadata documents.

    The whole probe runs under the server's deadline (``limits.timeout``): what was not learnt by then is left
    out, with a note."""
    notes: list[str] = []
    status: int | None = None
    challenge: dict[str, Any] | None = None
    prm_url: str | None = None
    prm: dict[str, Any] | None = None
    as_url: str | None = None
    as_doc: dict[str, Any] | None = None
    with anyio.move_on_after(limits.timeout) as whole:
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(limits.connect_timeout), follow_redirects=False, trust_env=False
        ) as client:
            with anyio.move_on_after(limits.connect_timeout) as scope:
                try:
                    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
                    body = json.dumps(_PROBE_BODY)
                    async with client.stream("POST", url, content=body, headers=headers) as response:
                        status = response.status_code
                        header = response.headers.get("www-authenticate")
                        if header:
                            challenge = parse_challenge(header)
                except httpx.HTTPError as exc:
                    notes.append(f"anonymous request failed: {type(exc).__name__}")
            if scope.cancelled_caught:
                notes.append(f"anonymous request: no answer within {limits.connect_timeout:g} s")
            prm_url, prm = await _protected_resource(client, url, challenge, limits, notes)
            as_url, as_doc = await _authorization_server(client, url, prm, limits, notes)
    if whole.cancelled_caught:
        notes.append(f"auth signals: the probe stopped at the server's {limits.timeout:g} s deadline")
    return AuthSignals(
        status=status,
        challenge=challenge,
        resource_metadata_url=prm_url,
        resource_metadata=prm,
        authorization_server_url=as_url,
        authorization_server=as_doc,
        notes=tuple(notes),
    )


async def _protected_resource(
    client: httpx.AsyncClient,
    url: str,
    challenge: Mapping[str, Any] | None,
    limits: ClientLimits,
    notes: list[str],
) -> tuple[str | None, dict[str, Any] | None]:
    pointed = (challenge or {}).get("params", {}).get("resource_metadata")
    candidates = well_known_urls(url)
    if isinstance(pointed, str) and pointed:
        pointed = urljoin(url, pointed)
        if same_origin(pointed, url):
            candidates.insert(0, pointed)
        else:
            notes.append(f"resource_metadata on another origin, not fetched: {pointed}")
    for candidate in candidates:
        document, error = await fetch_metadata(client, candidate, limits)
        if document is not None:
            return candidate, document
        notes.append(f"{candidate}: {error}")
    return None, None


def authorization_server_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata lives: RFC 8414 (path inserted), then OpenID Connect's two forms."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


async def _authorization_server(
    client: httpx.AsyncClient,
    url: str,
    prm: Mapping[str, Any] | None,
    limits: ClientLimits,
    notes: list[str],
) -> tuple[str | None, dict[str, Any] | None]:
    servers = (prm or {}).get("authorization_servers")
    issuer = next((item for item in servers if isinstance(item, str)), None) if isinstance(servers, list) else None
    if issuer is None or urlsplit(issuer).scheme not in ("http", "https"):
        return None, None
    refusal = await _more_private(issuer, url)
    if refusal:
        notes.append(f"authorization server not fetched: {refusal}")
        return None, None
    for candidate in authorization_server_urls(issuer):
        document, error = await fetch_metadata(client, candidate, limits)
        if document is not None:
            return candidate, document
        notes.append(f"{candidate}: {error}")
    return None, None


async def _more_private(target: str, server: str) -> str | None:
    """Why ``target`` (named by the server) must not be fetched: it is more private than the server itself.

    A public server must not make the doctor reach into the user's network; a server on the user's own machine
    or network may name an authorization server there.
    """
    from scanner.registry.address import refuse_reason

    if await refuse_reason(server, allow_private=False) is not None:
        return await refuse_reason(target, allow_private=True)
    return await refuse_reason(target, allow_private=False)


def explain(configured: str | None, lanes: Sequence[Lane], signals: AuthSignals, verdict: str) -> str:
    """The diagnosis in plain words: which lane the configuration is in (``configured``; None for a server given
    by URL, which has no configuration), what each lane saw, and why."""
    anonymous = lanes[0]
    others = [lane for lane in lanes[1:] if lane.ok]
    richest = max(others, key=lambda lane: len(lane.tools), default=None)
    sent = "no credential was sent" if configured in (ANONYMOUS, None) else f"it sends {configured}"
    if verdict == "unreachable":
        return f"could not connect in any lane: {anonymous.outcome.detail}"
    if anonymous.ok:
        without = f"the server answers {_tools(len(anonymous.tools))} without a credential"
    elif anonymous.outcome.outcome is Outcome.AUTH_REQUIRED:
        without = f"without a credential the server answers {anonymous.outcome.detail}"
    else:
        without = f"without a credential the connection ended {anonymous.outcome.outcome.value}"
    parts = [without] if configured is None else [f"this configuration is in the {configured} lane: {sent}", without]
    if richest is not None:
        parts.append(f"with {richest.label} it lists {_tools(len(richest.tools))}")
    failed = [lane for lane in lanes[1:] if not lane.ok]
    parts.extend(f"with {lane.label} the connection ended {lane.outcome.outcome.value}" for lane in failed)
    sentence = "; ".join(parts)
    if verdict == "silent-lane":
        return sentence + "; it gives callers without a credential no sign that they see less"
    if verdict == "auth-undiscoverable":
        return sentence + "; its 401 names no protected-resource metadata and none is at the well-known URL"
    if richest is not None and anonymous.ok and richest.only_here and signals.any_sign:
        return sentence + "; callers without a credential are told how to authenticate"
    if verdict == "not-compared":
        return sentence + "; no credential was given to compare (--bearer-env VAR or --header), so no lane is judged"
    return sentence


def _tools(count: int) -> str:
    return f"{count} tool" if count == 1 else f"{count} tools"
