"""The database schema as SQLAlchemy 2 typed declarative tables (SQLite and PostgreSQL).

The shape follows one scale rule: a registry of 20 000 servers rescanned every night for years. An unchanged
server therefore adds exactly one small ``scans`` row per run and nothing else: its tool list lives once in
``toolsets`` (keyed by content hash), and the list's token counts, per-tool costs and findings hang off that
toolset, not off the scan. Change events are written only when something changed.

``migrations/versions`` must agree with this module; ``tests/store/test_migrations.py`` proves it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from scanner.store.readsafe import EPOCH, GuardedRead, SafeInteger, SafeJSON, SafeString, SafeText, name_columns

# Stable constraint names, so Alembic can drop and compare them on every backend.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(GuardedRead, TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite hands back naive values otherwise). A stored value
    that is no date reads as 1970-01-01 UTC, said once (scanner.store.readsafe)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def stand_in(self) -> Any:
        return EPOCH

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# The keys the per-scan JSON columns repeat every night (timings, metrics, extra, a lane's signals), in the order
# of their codes: :class:`KeyedJSON` stores each as its position here. Append only: a position is a stored meaning,
# never reused or reordered (rows written with it are read back with it).
JSON_KEYS = (
    # scans.timings (scanner.mcp.session's laps)
    "connect",
    "handshake",
    "list",
    "shutdown",
    "total",
    "initialize",
    # scans.metrics (scanner.measure.metrics)
    "handshake_ms",
    "list_ms",
    "list_pages",
    "install_ms",
    "install",
    # scans.extra (the transports' and the session's facts)
    "discover",
    "delete_status",
    "session",
    "session_restarted",
    "attempts",
    "elapsed_s",
    "retry_stopped",
    "retry_after",
    "reason",
    "stderr_tail",
    "exit_code",
    "not_run",
    "measure_error",
    "local_port",
    "ttl_ms",
    "cache_scope",
    "tools_capability",
    "secrets_scrubbed",
    "x402",
    # scan_lanes.signals (and the auth facts of extra)
    "status",
    "challenge",
    "resource_metadata_url",
    "resource_metadata",
    "resource_metadata_error",
    "issuers",
    "scopes_supported",
)
_KEY_CODES = {key: code for code, key in enumerate(JSON_KEYS)}


class KeyedJSON(GuardedRead, TypeDecorator[dict[str, Any]]):
    """A JSON object kept as a flat array ``[key, value, key, value, ...]`` whose known keys are their
    :data:`JSON_KEYS` position (``{"connect":0.2,"list":52.9}`` is stored ``[0,0.2,2,52.9]``), and read back as the
    same object, key order included. A row written as an object (before migration 0007) reads as it is.

    For the JSON a scan row repeats every night: the keys were most of its bytes (issue #24's growth budget).
    Only the top level is keyed; values (nested objects too) are stored as they are.
    """

    impl = JSON
    cache_ok = True
    obj = True  # read by GuardedRead: not JSON, or no object, reads as {} (scanner.store.readsafe), said once

    def stand_in(self) -> Any:
        return {}

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if type(value) is not dict:
            return value
        flat: list[Any] = []
        for key, item in value.items():
            if type(key) is not str:
                return value  # JSON would spell this key its own way: kept an object, read back as it was
            flat += (_KEY_CODES.get(key, key), item)
        return flat

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return unkeyed(value)


def unkeyed(value: Any) -> Any:
    """A :class:`KeyedJSON` column's parsed JSON as the object it stands for (for a raw ``SELECT``'s value; reads
    through SQLAlchemy get it already): a flat keyed array as its object, anything else as it is."""
    if type(value) is not list:
        return value
    return {_json_key(key): item for key, item in zip(value[::2], value[1::2], strict=True)}


def _json_key(code: Any) -> str:
    """A :class:`KeyedJSON` key back: its position in :data:`JSON_KEYS`, or the key itself."""
    if type(code) is int and 0 <= code < len(JSON_KEYS):
        return JSON_KEYS[code]
    return str(code)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), dict[str, Any]: SafeJSON()}


class Server(Base):
    """One server name as the registry spells it; scans refer to it by id."""

    __tablename__ = "servers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(SafeString(None), unique=True)
    first_seen: Mapped[datetime]
    first_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    # Pointers to the newest scan and newest successful scan (no foreign key: scans already point here, and a
    # cycle would complicate SQLite's table rebuilds). They make "the previous scan" and the server list O(1)
    # per server however many years of scans pile up.
    last_scan_id: Mapped[int | None] = mapped_column(SafeInteger())
    last_ok_scan_id: Mapped[int | None] = mapped_column(SafeInteger())


class Run(Base):
    """One crawl: when, of what, under which rule catalogue, with which (secret-free) options."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(SafeString(16, 16), index=True)  # running | finished | interrupted
    source: Mapped[str] = mapped_column(SafeString(2000))
    rule_version: Mapped[str] = mapped_column(SafeString(64, 64))
    options: Mapped[dict[str, Any]]
    servers_scanned: Mapped[int] = mapped_column(SafeInteger(0), default=0)
    servers_ok: Mapped[int] = mapped_column(SafeInteger(0), default=0)
    # A distributed run (``fathom scan --enqueue``): how many servers were queued. It is finished by the worker
    # whose write makes the scans reach this number. None for a run one process crawls.
    planned: Mapped[int | None] = mapped_column(SafeInteger())


class ToolsetRow(Base):
    """A tool list stored once by content hash: zlib-compressed canonical JSON of the tools."""

    __tablename__ = "toolsets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(SafeString(64, 64), unique=True)
    tools_count: Mapped[int] = mapped_column(SafeInteger(0))
    raw_size: Mapped[int] = mapped_column(SafeInteger(0))  # bytes of the canonical JSON before compression
    data: Mapped[bytes] = mapped_column(LargeBinary)
    first_seen: Mapped[datetime]


class Measurement(Base):
    """That a toolset was measured under a rule catalogue version (also when it had no findings), and on what else
    the numbers rest (``basis``: the tokenizers' versions and the client table, :mod:`scanner.measure.basis`; NULL
    for a measurement stored before it was kept). A scan reuses a measurement only under its own basis."""

    __tablename__ = "measurements"

    toolset_id: Mapped[int] = mapped_column(ForeignKey("toolsets.id", ondelete="CASCADE"), primary_key=True)
    rule_version: Mapped[str] = mapped_column(String(64), primary_key=True)
    measured_at: Mapped[datetime]
    basis: Mapped[str | None] = mapped_column(String(64), nullable=True)


class ToolsetToken(Base):
    """The tokens one provider spends per turn on a whole toolset, and how that was counted."""

    __tablename__ = "toolset_tokens"

    toolset_id: Mapped[int] = mapped_column(ForeignKey("toolsets.id", ondelete="CASCADE"), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32), primary_key=True)
    tokens: Mapped[int] = mapped_column(SafeInteger(0))
    method: Mapped[str] = mapped_column(SafeString(200, 200))


class ToolToken(Base):
    """One tool's own cost per provider, so "the five largest tools" never needs a recount."""

    __tablename__ = "tool_tokens"

    toolset_id: Mapped[int] = mapped_column(ForeignKey("toolsets.id", ondelete="CASCADE"), primary_key=True)
    tool_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(SafeString(300))
    tokens: Mapped[dict[str, Any]]  # {provider: tokens}
    max_tokens: Mapped[int] = mapped_column(SafeInteger(0))


class StoredFinding(Base):
    """A rule hit. Toolset findings have ``scan_id`` NULL; history findings (MCP5xx) belong to one scan."""

    __tablename__ = "findings"
    __table_args__ = (
        Index("ix_findings_toolset_version", "toolset_id", "rule_version"),
        Index("ix_findings_code", "code"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # NULL only for a scan's own finding when it listed no tools in any lane (MCP602 on a 401; migration 0004).
    toolset_id: Mapped[int | None] = mapped_column(ForeignKey("toolsets.id", ondelete="CASCADE"))
    scan_id: Mapped[int | None] = mapped_column(ForeignKey("scans.id", ondelete="CASCADE"), index=True)
    rule_version: Mapped[str] = mapped_column(SafeString(64, 64))
    code: Mapped[str] = mapped_column(SafeString(16, 16))
    slug: Mapped[str] = mapped_column(SafeString(64, 64))
    severity: Mapped[int] = mapped_column(SafeInteger(0))  # scanner.models.Severity value: 0 problem, 1 warning, 2 note
    tool: Mapped[str | None] = mapped_column(SafeString(300))
    tool_index: Mapped[int | None] = mapped_column(SafeInteger())
    message: Mapped[str] = mapped_column(SafeText(2000))
    hint: Mapped[str] = mapped_column(SafeText(1000))
    pointer: Mapped[str | None] = mapped_column(SafeText(1000))
    details: Mapped[dict[str, Any]]


class Scan(Base):
    """One server in one run: how it ended, what it said about itself, and which toolset it served."""

    __tablename__ = "scans"
    __table_args__ = (
        UniqueConstraint("run_id", "server_id"),
        Index("ix_scans_server", "server_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    scanned_at: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(SafeString(32, 32))
    detail: Mapped[str] = mapped_column(SafeText(500), default="")
    transport: Mapped[str] = mapped_column(SafeString(32, 32))
    era: Mapped[str | None] = mapped_column(SafeString(16, 16))
    protocol_version: Mapped[str | None] = mapped_column(SafeString(32, 32))
    server_name: Mapped[str | None] = mapped_column(SafeString(200))  # serverInfo.name
    server_version: Mapped[str | None] = mapped_column(SafeString(100))  # serverInfo.version
    capability_profile: Mapped[str | None] = mapped_column(SafeString(64, 64))
    timings: Mapped[dict[str, Any]] = mapped_column(KeyedJSON)
    pages: Mapped[int] = mapped_column(SafeInteger(0), default=0)
    # Not indexed (migration 0007), nor is instructions_id: no query looks scans up by either, and toolsets and
    # instructions are never deleted, so the index would only add bytes to every nightly row.
    toolset_id: Mapped[int | None] = mapped_column(ForeignKey("toolsets.id"))
    anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    extra: Mapped[dict[str, Any]] = mapped_column(KeyedJSON)
    # What was run (migration 0003): the entry's version in its registry (beside serverInfo's), its package
    # (registry_type, identifier, version, pinned, spec, runner), its URL and command line, secrets redacted.
    registry_version: Mapped[str | None] = mapped_column(SafeString(100, 100))
    # None: SQL NULL, not 'null'
    package: Mapped[dict[str, Any] | None] = mapped_column(SafeJSON(nullable=True, none_as_null=True))
    url: Mapped[str | None] = mapped_column(SafeText(2000))
    command: Mapped[str | None] = mapped_column(SafeText(2000))
    # Scans in lanes (docs/lanes.md): which lane this row's result is (the richest), NULL for a one-lane scan.
    lane: Mapped[str | None] = mapped_column(SafeString(16, 16))
    instructions_id: Mapped[int | None] = mapped_column(ForeignKey("instructions.id"))
    # Every registered per-scan metric (scanner.measure.metrics) as {name: number}; NULL for scans before migration
    # 0006.
    metrics: Mapped[dict[str, Any] | None] = mapped_column(KeyedJSON)


class InstructionsRow(Base):
    """A server's ``instructions`` text stored once by content hash (sha256 of the UTF-8 text), like a toolset."""

    __tablename__ = "instructions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(SafeString(64, 64), unique=True)
    text: Mapped[str] = mapped_column(Text)
    chars: Mapped[int] = mapped_column(SafeInteger(0))
    first_seen: Mapped[datetime]


class InstructionsToken(Base):
    """What one instructions text costs one provider per turn as a system text, and how that was counted."""

    __tablename__ = "instructions_tokens"

    instructions_id: Mapped[int] = mapped_column(ForeignKey("instructions.id", ondelete="CASCADE"), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32), primary_key=True)
    tokens: Mapped[int] = mapped_column(SafeInteger(0))
    method: Mapped[str] = mapped_column(SafeString(200, 200))


class ScanLaneRow(Base):
    """One lane of a scan in lanes: how it ended, the toolset it listed, and (anonymous) its auth signals."""

    __tablename__ = "scan_lanes"
    __table_args__ = (UniqueConstraint("scan_id", "lane"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[int] = mapped_column(ForeignKey("scans.id", ondelete="CASCADE"))
    lane: Mapped[str] = mapped_column(SafeString(16, 16))  # anonymous | credentialed
    outcome: Mapped[str] = mapped_column(SafeString(32, 32))
    detail: Mapped[str] = mapped_column(SafeText(500), default="")
    toolset_id: Mapped[int | None] = mapped_column(ForeignKey("toolsets.id"))  # not indexed, as scans' (0007)
    tools_count: Mapped[int | None] = mapped_column(SafeInteger())
    signals: Mapped[dict[str, Any]] = mapped_column(KeyedJSON)


class Event(Base):
    """Something that changed on a server between two scans (a tool, a finding, its version, its outcome)."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_server", "server_id", "id"),
        Index("ix_events_kind", "kind", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    scan_id: Mapped[int] = mapped_column(ForeignKey("scans.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(SafeString(32, 32))
    tool: Mapped[str | None] = mapped_column(SafeString(300))
    code: Mapped[str | None] = mapped_column(SafeString(16, 16))  # for finding_appeared / finding_resolved
    details: Mapped[dict[str, Any]]


class RunAggregate(Base):
    """One run summarised, so trend queries read one row per run."""

    __tablename__ = "run_aggregates"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    rule_version: Mapped[str] = mapped_column(SafeString(64, 64))  # the catalogue the findings were counted under
    computed_at: Mapped[datetime]
    servers_scanned: Mapped[int] = mapped_column(SafeInteger(0))
    servers_ok: Mapped[int] = mapped_column(SafeInteger(0))
    servers_with_problems: Mapped[int] = mapped_column(SafeInteger(0))
    outcomes: Mapped[dict[str, Any]]  # {outcome: servers}
    median_tokens: Mapped[int | None] = mapped_column(SafeInteger())  # with each server's most expensive provider
    p90_tokens: Mapped[int | None] = mapped_column(SafeInteger())
    median_tokens_by_provider: Mapped[dict[str, Any]]
    median_tools: Mapped[int | None] = mapped_column(SafeInteger())
    findings_by_rule: Mapped[dict[str, Any]]  # {code: servers hit}


class WriterLock(Base):
    """The database's one writer: at most one row (id 1), held by the scan or rescore writing now.

    ``scanner.store.lock`` takes, refreshes and releases it; a row left by a killed process is taken over when its
    pid is gone from its host or its heartbeat has stopped.
    """

    __tablename__ = "writer_lock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    token: Mapped[str] = mapped_column(String(64))  # this holder's random id: release and refresh only our own
    purpose: Mapped[str] = mapped_column(String(32))  # scan | rescore
    pid: Mapped[int] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime]
    heartbeat_at: Mapped[datetime]


class RunWorker(Base):
    """A worker that wrote scans into a distributed run: its name, and how many servers and when."""

    __tablename__ = "run_workers"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    worker: Mapped[str] = mapped_column(String(200), primary_key=True)  # host:pid unless named
    first_at: Mapped[datetime]
    last_at: Mapped[datetime]
    scans: Mapped[int] = mapped_column(SafeInteger(0))


name_columns(Base.metadata)  # each guarded column's warning names its table and column

# The task engine's own tables (``procrastinate_*``, created by migration 0005 on PostgreSQL from the engine's
# schema file): not described here, so schema comparisons leave them out with :func:`described_here`.
ENGINE_TABLE_PREFIX = "procrastinate_"


def described_here(name: str | None, type_: str, _parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: False for the task engine's tables, which this module does not model."""
    return not (type_ == "table" and name is not None and name.startswith(ENGINE_TABLE_PREFIX))
