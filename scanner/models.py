"""Frozen dataclasses every stage shares.

Raw JSON from servers stays raw (``Any``) inside a :class:`Toolset` until the rules and provider views read it:
a hostile list may hold tools that are not objects, names that are not strings, schemas nested thousands deep.
Nothing here trusts its contents.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProviderName:
    """One key token counts are stored under, and how people see it. The one table of provider names."""

    key: str
    label: str
    short: str
    headline: bool = True


PROVIDER_TABLE: tuple[ProviderName, ...] = (
    ProviderName("anthropic", "Anthropic (Claude Opus 4.7+ tokenizer)", "Claude 4.7+"),
    ProviderName("anthropic-v3", "Anthropic (Claude 3 to Opus 4.6 tokenizer)", "Claude 3-4.6", headline=False),
    ProviderName("openai", "OpenAI", "OpenAI"),
    ProviderName("gemini", "Google Gemini", "Gemini"),
)
"""Every provider key a measurement stores, in display order. ``anthropic`` is the tokenizer of Claude's current
flagship models (Opus 4.7 and later); ``anthropic-v3`` the earlier one, still used by Sonnet 4.x, Opus 4.5/4.6
and Haiku 4.5 (see docs/tokens.md)."""

MEASURED_PROVIDERS: tuple[str, ...] = tuple(name.key for name in PROVIDER_TABLE)
"""Every key ``fathom check`` and a scan count and store."""
PROVIDERS: tuple[str, ...] = tuple(name.key for name in PROVIDER_TABLE if name.headline)
"""The headline keys: leaderboards, query columns and the 200k share use these."""
PROVIDER_LABELS: dict[str, str] = {name.key: name.label for name in PROVIDER_TABLE} | {
    "gemini-openapi": "Google Gemini (parameters, OpenAPI subset)"
}
PROVIDER_SHORT: dict[str, str] = {name.key: name.short for name in PROVIDER_TABLE}


class ProviderView(enum.StrEnum):
    """What ``fathom check --as`` prints: the ``tools`` JSON each API receives. ``gemini`` is what current clients
    built on Google's SDKs send (``parametersJsonSchema``); ``gemini_openapi`` the ``parameters`` subset."""

    anthropic = "anthropic"
    openai = "openai"
    gemini = "gemini"
    gemini_openapi = "gemini-openapi"


VIEW_NAMES: tuple[str, ...] = tuple(view.value for view in ProviderView)
CONTEXT_WINDOW = 200_000


class Severity(enum.IntEnum):
    """Finding severities; a lower value is worse, so sorting by value puts the worst first."""

    PROBLEM = 0
    WARNING = 1
    NOTE = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value: sorted keys, no spaces, UTF-8 kept as is (``json.dumps`` with those
    options, its encoder built once: the rules and the store ask for thousands a night)."""
    return _CANONICAL.encode(value)


@dataclass(frozen=True)
class Toolset:
    """A server's tool list exactly as it arrived (every page joined), and its content hash.

    ``sha256`` is over :func:`canonical_json` of ``tools``, so the same list always hashes the same however a
    server spaced or ordered its keys; it identifies a stored toolset.
    """

    tools: tuple[Any, ...]
    sha256: str

    @classmethod
    def from_tools(cls, tools: list[Any] | tuple[Any, ...]) -> Toolset:
        items = tuple(tools)
        digest = hashlib.sha256(canonical_json(list(items)).encode("utf-8")).hexdigest()
        return cls(tools=items, sha256=digest)

    def __len__(self) -> int:
        return len(self.tools)


@dataclass(frozen=True)
class TokenCount:
    """Tokens one provider spends per turn on a list (or one tool), and how that number was made."""

    provider: str
    tokens: int
    method: str


@dataclass(frozen=True)
class ToolCost:
    """One tool's cost per provider (the tool's own definition, without any per-list overhead)."""

    name: str
    index: int
    tokens: Mapping[str, int]


@dataclass(frozen=True)
class Finding:
    """One rule hit: one record per (rule, tool), or per pair or list for list rules."""

    code: str
    rule: str
    severity: Severity
    tool: str | None
    message: str
    hint: str
    pointer: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    tool_index: int | None = None

    def sort_key(self) -> tuple[int, int, str]:
        return (int(self.severity), -1 if self.tool_index is None else self.tool_index, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity.label,
            "tool": self.tool,
            "message": self.message,
            "hint": self.hint,
            "pointer": self.pointer,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Summary:
    problems: int = 0
    warnings: int = 0
    notes: int = 0

    @classmethod
    def of(cls, findings: list[Finding] | tuple[Finding, ...]) -> Summary:
        counts = [0, 0, 0]
        for finding in findings:
            counts[int(finding.severity)] += 1
        return cls(problems=counts[0], warnings=counts[1], notes=counts[2])

    def headline(self) -> str:
        """``1 problem, 2 warnings, 3 notes`` (zero counts left out), or the all-clear line."""
        parts = []
        for count, word in ((self.problems, "problem"), (self.warnings, "warning"), (self.notes, "note")):
            if count:
                parts.append(f"{count} {word}{'' if count == 1 else 's'}")
        return ", ".join(parts) if parts else "Nothing a model would stumble over"


@dataclass(frozen=True)
class InstructionsCost:
    """The server's ``instructions``: the text, its content hash, and what it costs per turn per provider as a
    system text (scanner.providers.system), each count with its method."""

    text: str
    sha256: str
    tokens: Mapping[str, TokenCount]

    @property
    def max_tokens(self) -> int:
        return max((count.tokens for count in self.tokens.values()), default=0)


@dataclass(frozen=True)
class CheckReport:
    """Everything ``fathom check`` says about one tool list (and the server's instructions, when it sent any)."""

    tools_count: int
    tokens: Mapping[str, TokenCount]
    context_share: float
    tool_costs: tuple[ToolCost, ...]
    findings: tuple[Finding, ...]
    toolset_sha256: str
    instructions: InstructionsCost | None = None

    @property
    def summary(self) -> Summary:
        return Summary.of(self.findings)

    @property
    def tools_by_cost(self) -> tuple[ToolCost, ...]:
        """Every tool, most expensive first (by its dearest provider), then in list order."""
        return tuple(sorted(self.tool_costs, key=lambda cost: (-max(cost.tokens.values(), default=0), cost.index)))

    @property
    def largest_tools(self) -> tuple[ToolCost, ...]:
        """The five most expensive tools (by their dearest provider), left out for a one-tool list."""
        if self.tools_count <= 1:
            return ()
        return self.tools_by_cost[:5]

    @property
    def max_tokens(self) -> int:
        return max((count.tokens for count in self.tokens.values()), default=0)


# --- Servers and scans -------------------------------------------------------------------------------------


class Transport(enum.StrEnum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable-http"
    SSE = "sse"
    HTTP = "http"  # a URL whose transport is not known yet: try streamable HTTP, fall back to legacy SSE


@dataclass(frozen=True)
class ServerEntry:
    """One server to connect to, resolved from a registry, a list or a client config file.

    ``headers`` and ``env`` may hold secrets taken from the environment: they are used to connect and never
    stored or printed. ``skip`` says why an entry will not be connected to (for example a package that needs
    ``--run-packages``, or a secret header that is not in the environment and is required).
    """

    name: str
    transport: Transport
    url: str | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    version: str | None = None
    source: str | None = None
    skip: str | None = None
    anonymous: bool = False
    secret_header_names: tuple[str, ...] = ()
    package: Mapping[str, Any] | None = None
    # Headers of ``headers`` that carry a credential from the environment (FATHOM_SECRET_...): a scan lists the
    # server once with them and once without (the anonymous lane; docs/lanes.md).
    credential_headers: tuple[str, ...] = ()
    # What the registry published that a client stumbles over (MCP7xx, scanner.rules.registrydata): found when the
    # registry is read, stored with the entry's scan whatever its outcome.
    findings: tuple[Finding, ...] = ()
    # "deleted" or "deprecated" when the registry says so (its statusMessage beside it): recorded, never scanned.
    registry_status: str | None = None
    status_message: str | None = None
    # The server.json ``packages[]`` object ``command`` and ``env`` were built from (registry data, never a value
    # from the environment): a distributed worker rebuilds the command from it under its own flags.
    package_source: Mapping[str, Any] | None = None

    def target(self) -> str:
        """What to show a person: the URL, or the command line."""
        return self.url or " ".join(self.command)


SETUP_FAULT = "Fathom's setup, not the package's fault"
"""How the detail of a child that failed because of where or how Fathom started it begins
(scanner.packages.diagnose writes it, scanner.report.census counts it as the host's fault)."""


class Outcome(enum.StrEnum):
    """How one server's scan ended. A server's failure is data, never an exception."""

    OK = "ok"
    AUTH_REQUIRED = "auth_required"
    TIMEOUT = "timeout"
    CONNECT_ERROR = "connect_error"
    HTTP_ERROR = "http_error"
    PROTOCOL_ERROR = "protocol_error"
    INVALID_RESPONSE = "invalid_response"
    TOO_LARGE = "too_large"
    SPAWN_ERROR = "spawn_error"
    EXITED = "exited"
    SKIPPED = "skipped"
    REFUSED = "refused"  # e.g. a URL resolving to a private address without --allow-private
    # Registry packages that did not answer, by cause (see scanner.packages.diagnose).
    RUNNER_MISSING = "runner_missing"  # npx, uvx or docker is not installed
    PACKAGE_NOT_FOUND = "package_not_found"  # no such package, or not at the declared version
    INSTALL_FAILED = "install_failed"  # network, TLS, build or missing-executable trouble while installing
    NEEDS_CONFIGURATION = "needs_configuration"  # a variable, argument or file it needs is not set
    CRASHED = "crashed"  # started, then died before answering
    MEMORY_LIMIT = "memory_limit"  # ran out of memory under Fathom's own cap (--memory-limit-mb)
    # Census classes (docs/outcomes.md): answered, but not with a tool list anyone can measure.
    PAYMENT_REQUIRED = "payment_required"  # HTTP 402 (an x402 offer's summary in extra["x402"] when present)
    NOT_MCP = "not_mcp"  # answered HTML, or JSON that is not JSON-RPC: a web page, an API, a parked domain
    RATE_LIMITED = "rate_limited"  # HTTP 429 after the allowed retries: unmeasured, not broken
    # The registry's own word on an entry (never connected to, never a failure; the detail holds its statusMessage).
    DELISTED = "delisted"  # deleted from the registry
    DEPRECATED = "deprecated"  # deprecated in the registry


@dataclass(frozen=True)
class ScanOutcome:
    """The result of connecting to one server and listing its tools.

    ``tools`` is the raw list (every page joined) when ``outcome`` is ok, else None. ``detail`` is one line a
    person can read; ``extra`` holds outcome-specific data (the auth challenge and its RFC 9728 metadata, the
    HTTP status, the exit code and last stderr lines, ...).
    """

    outcome: Outcome
    transport: str
    detail: str = ""
    tools: tuple[Any, ...] | None = None
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    era: str | None = None  # "legacy" (initialize handshake) or "stateless" (2026-07-28 server/discover)
    capability_profile: str | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    pages: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    lane: str | None = None  # "anonymous" or "credentialed" when the scan ran in lanes (docs/lanes.md)
    lanes: tuple[LaneOutcome, ...] = ()  # every lane of a scan in lanes, anonymous first (this one among them)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


@dataclass(frozen=True)
class LaneOutcome:
    """One lane of a server scanned with and without its credential: the lane's name, its outcome, and (for the
    anonymous lane) the auth signals its answer gave: ``status``, ``challenge``, ``resource_metadata_url``,
    ``resource_metadata`` (present or not), ``issuers`` (its authorization servers), ``scopes_supported``."""

    lane: str
    outcome: ScanOutcome
    signals: Mapping[str, Any] = field(default_factory=dict)


# Walks over untrusted schemas stop descending here; deeper parts are reported (MCP212) rather than followed.
SCHEMA_DEPTH_LIMIT = 64
