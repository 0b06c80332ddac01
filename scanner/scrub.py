"""The one secret scrubber: every secret a scan knows, in every shape a server may echo it, out of its outcome.

A server may echo what it was sent (an ``Authorization`` header in a 401 body, an API key from its environment
on stderr) into text the scan keeps: the one-line ``detail``, strings anywhere in ``extra`` (``reason``,
``error.message``, the challenge's ``error_description``, ``stderr_tail``, snippets...), even its tool list.
:func:`scanner.mcp.scan_server` passes its outcome through :meth:`Scrubber.outcome` once, where the outcome leaves
the client, so ``check``, ``scan`` and the store all see the same scrubbed result.

What the scan knows as secret (:meth:`Scrubber.for_scan`):

* the values of *secret* request headers, whole and, after an auth scheme, the credential alone; for ``Basic``
  also the decoded ``user:password`` and password. A header is secret when its name says so (``Authorization``,
  ``Cookie``, ``X-Api-Key``, ``*-Token``..., :func:`secret_name`) or its value came from the environment
  (``entry.credential_headers``: a registry header filled from ``FATHOM_SECRET_*``); an ordinary header
  (``--header 'X-Tenant: default'``) is sent, not scrubbed, so the schema keyword ``default`` stays itself;
* the *secret* environment values given to a child (a package's or a config's ``env``, :func:`secret_env_value`):
  a variable the registry declares ``isSecret``, one whose name says secret, and any other value except an
  ordinary one (a word, a number, a host or address, a path, a URL without credentials: ``127.0.0.1``,
  ``localhost``, ``qdrant``, ``WARNING``) and except the value the registry entry itself declares for a variable
  it does not call secret (it is published there). ``PATH``, ``LANG``, ``HOME``... are never secret. The password
  of a URL-valued variable is a secret in any case;
* every ``FATHOM_SECRET_<SERVER>_*`` value of this server (headers, package variables);
* for a server that runs here (a stdio server, a local-port package: a child of this process, which could have
  read what this process holds), every secret this *process* holds (:func:`held_secrets`), whichever server it is
  meant for: each ``FATHOM_SECRET_*`` value (an ordinary one only when the variable's name says secret), the
  value of each variable of this process's environment whose name says secret (``*_TOKEN``, ``*API_KEY``,
  ``*SECRET*``, ``*PASSWORD*``, ``PGPASSWORD``...; not a value that is an absolute path), the password in any
  URL-valued variable (``DATABASE_URL=postgres://u:pw@h/db``), and the values registered with :func:`hold` (the
  ``--db`` URL's password, and every secret environment value of every entry of the scan,
  :func:`hold_entries`: a config command that read a sibling's token from ``/proc`` cannot publish it). A child
  that got hold of another server's token (through a shared file, say) cannot publish it through its tool list
  or its stderr. A remote server's answers are searched for its own secrets only (it never ran here; searching
  every answer of a crawl for every held secret would cost it dearly).

Every child's outcome goes through the same scrubber: a stdio server's in :func:`scanner.mcp.scan_server`, a
package's (stdio or local port, its stderr tail included) once more where the crawl takes it
(:meth:`Scrubber.for_child`).

A scrubber tests plain substrings first and runs its regular expression only on a text that holds one; the
pattern of one set of secrets is built once (:func:`_matcher`).

Shapes (:func:`shapes`): as is, JSON-escaped (ASCII or not), URL-encoded (``quote``, ``quote_plus``),
HTML-escaped, and base64 (standard and URL-safe, at each of the three byte alignments, so it is found inside a
longer base64 text such as a Basic credential). A value shorter than :data:`MIN_CHARS` is not scrubbed: it
could be any word of an error text. A one-word secret cut by a length cap (the server's text is cut to 200 or
500 characters, stderr to its last 64 KiB) leaves a prefix or a suffix of it: any run of at least
:data:`PARTIAL_CHARS` characters that begins or ends such a secret is scrubbed too. Each occurrence becomes
:data:`MARK`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import functools
import html
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from scanner import wire

if TYPE_CHECKING:
    from scanner.models import ScanOutcome, ServerEntry

MARK = "[secret]"
MIN_CHARS = 6
PARTIAL_CHARS = 8
# Environment names whose values are never secret and are common words or paths in any error text.
NOT_SECRET_ENV = frozenset(
    {"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "HOME", "TMPDIR", "TMP", "TEMP", "PWD", "SHELL", "TERM", "USER"}
    | {"LOGNAME", "PYTHONHASHSEED", "NODE_ENV", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}
)
_SECRET_NAME = re.compile(
    r"secret|passw|credential|token|api[-_]?key|apikey|auth|bearer|private[-_]?key|cookie|session|access[-_]?key"
    r"|(?:^|[-_])(?:key|pass|pwd|pat|jwt|dsn)(?:$|[-_])",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"://([^/@\s:]*):([^/@\s]+)@")
# Ordinary values, never a credential: words (WARNING, qdrant, localhost, "us east"), numbers and versions, a
# lower-case host name or IPv4 address with a dot (a JWT has capitals), with a port, an IPv6 address, an absolute
# or home path, and a URL with none of a credential's places (no user, query or long path segment).
_ORDINARY = re.compile(
    r"[A-Za-z]{1,40}(?:[ ._-][A-Za-z]{1,40}){0,5}(?::\d{1,5})?"
    r"|[-+]?\d{1,12}(?:\.\d{1,12}){0,3}"
    r"|[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}(?::\d{1,5})?"
    r"|\[?[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\]?(?::\d{1,5})?"
    r"|~?/[^\s]*"
    r"|[a-z][a-z0-9+.-]{0,15}://(?:[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,8}|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
    r"(?:/[A-Za-z0-9._-]{1,12}){0,4}/?"
)
# Values registered by this process (hold()): the --db URL's password and the like.
_HELD: set[str] = set()
# The secret environment values of every entry of the scan under way (scan_secrets()).
_SCAN_HELD: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("fathom_scan_secrets", default=frozenset())


def hold(*values: str | None) -> None:
    """Register secrets this process holds outside its environment (a ``--db`` URL's password): every later
    scrubber scrubs them from every server's output."""
    _HELD.update(value for value in values if value and len(value) >= MIN_CHARS)


@contextlib.contextmanager
def scan_secrets(entries: Iterable[ServerEntry]) -> Iterator[None]:
    """While in the block (and in every task started in it), the secret environment values of every one of
    ``entries`` are held secrets: a child that read a sibling's token (its ``/proc/<pid>/environ``, a shared
    file) has it scrubbed from what it sends back."""
    found: set[str] = set(_SCAN_HELD.get())
    for entry in entries:
        found |= entry_env_secrets(entry, entry.env)
    token = _SCAN_HELD.set(frozenset(secret.strip() for secret in found))
    try:
        yield
    finally:
        _SCAN_HELD.reset(token)


def ordinary(value: str) -> bool:
    """True for a value of a shape no credential has (see :data:`_ORDINARY`): ``127.0.0.1``, ``WARNING``."""
    return _ORDINARY.fullmatch(value.strip()) is not None


def url_passwords(value: str) -> set[str]:
    """The password, and ``user:password``, of every URL with credentials in ``value``."""
    found: set[str] = set()
    for match in _URL_PASSWORD.finditer(value):
        found.add(match.group(2))
        found.add(f"{match.group(1)}:{match.group(2)}")
    return found


def held_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Every secret this process holds (see the module docstring), in the forms a header or variable holds."""
    environ = os.environ if environ is None else environ
    found: set[str] = set(_HELD) | _SCAN_HELD.get()
    from scanner.registry.secrets import PREFIX  # the one naming rule; imported late (no cycle)

    for key, value in environ.items():
        if not value or key in NOT_SECRET_ENV:
            continue
        if key.startswith(PREFIX):
            # The naming rule carries every input of a server, ordinary ones too (QDRANT_HOST=qdrant).
            if secret_name(key.removeprefix(PREFIX)) or not ordinary(value):
                found |= _header_secrets(value)
        elif secret_name(key) and not value.startswith("/"):
            found |= _header_secrets(value)
        found |= url_passwords(value)
    return {secret.strip() for secret in found}


def _declared_env(entry: ServerEntry) -> tuple[set[str], dict[str, set[str]]]:
    """The variables the entry's registry package declares secret, and the literal value and default it
    declares for each other variable (published in the registry: never a secret)."""
    secret = set((entry.package or {}).get("secret_env_names") or ())
    public: dict[str, set[str]] = {}
    source = entry.package_source if isinstance(entry.package_source, Mapping) else {}
    variables = source.get("environmentVariables") or source.get("environment_variables") or ()
    for var in variables if isinstance(variables, list) else ():
        if not isinstance(var, Mapping) or not isinstance(var.get("name"), str):
            continue
        if var.get("isSecret") is True or var.get("is_secret") is True:
            secret.add(var["name"])
            continue
        public[var["name"]] = {str(var[key]) for key in ("value", "default") if isinstance(var.get(key), str)}
    return secret, public


def entry_env_secrets(entry: ServerEntry, env: Mapping[str, str]) -> set[str]:
    """The secret values of ``env``, the environment given to ``entry``'s child (see the module docstring):
    declared secret, named secret, or not ordinary; never a value the registry entry publishes itself."""
    declared_secret, declared_public = _declared_env(entry)
    found: set[str] = set()
    for key, value in env.items():
        if not value or key in NOT_SECRET_ENV:
            continue
        found |= url_passwords(value)
        if key in declared_secret:
            found.add(value)
        elif value in declared_public.get(key, ()):
            continue
        elif secret_name(key) or not ordinary(value):
            found.add(value)
    return {secret.strip() for secret in found}


def secret_name(name: str) -> bool:
    """True for an environment variable name that says its value is a credential."""
    return bool(_SECRET_NAME.search(name))


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 text of ``raw`` as it appears inside any longer base64 text: one core per byte alignment."""
    cores: set[str] = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode("ascii").rstrip("=")
        first = -(-8 * pad // 6)  # the first character not touched by the pad bytes
        last = (8 * (pad + len(raw))) // 6  # one past the last character made of raw's bits alone
        core = encoded[first:last]
        if len(core) >= MIN_CHARS:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


@functools.lru_cache(maxsize=4096)
def _shapes(secret: str) -> frozenset[str]:
    return frozenset(shapes(secret))


def shapes(secret: str) -> set[str]:
    """Every text ``secret`` may be echoed as (see the module docstring)."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        html.escape(secret),
    }
    forms |= _base64_cores(secret.encode("utf-8", "surrogatepass"))
    return {form for form in forms if len(form) >= MIN_CHARS}


def _header_secrets(value: str) -> set[str]:
    value = value.strip()
    found = {value}
    scheme, _, credential = value.partition(" ")
    credential = credential.strip()
    if credential:
        found.add(credential)
        found.update(part for part in value.split() if len(part) >= MIN_CHARS and part.lower() != scheme.lower())
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credential, validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                decoded = ""
            if decoded:
                found.add(decoded)
                found.add(decoded.partition(":")[2])
    return found


def _cut_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding a prefix or a suffix of ``secret`` at least :data:`PARTIAL_CHARS` long."""
    spans: list[tuple[int, int]] = []
    head, tail = secret[:PARTIAL_CHARS], secret[-PARTIAL_CHARS:]
    start = text.find(head)
    while start >= 0:
        end = start + PARTIAL_CHARS
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        spans.append((start, end))
        start = text.find(head, end)
    end = text.find(tail)
    while end >= 0:
        stop = end + PARTIAL_CHARS
        begin = end
        while begin > 0 and stop - begin < len(secret) and text[begin - 1] == secret[-(stop - begin) - 1]:
            begin -= 1
        spans.append((begin, stop))
        end = text.find(tail, stop)
    return spans


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the (possibly overlapping) ``spans`` merged and each run replaced by :data:`MARK`."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces: list[str] = []
    last = 0
    for start, end in merged:
        pieces += [text[last:start], MARK]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


@functools.lru_cache(maxsize=64)
def _matcher(
    secrets: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The pattern, the plain forms, the secrets looked for cut, and the needles of a quick substring test, for one
    set of secrets (cached: a crawl builds a scrubber per server, mostly from the same held secrets)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= _shapes(secret)
    pattern = re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))) if forms else None
    # Only single words are looked for cut: a prefix of "Bearer x" would match a bare "Bearer".
    cuttable = tuple(s for s in secrets if len(s) > PARTIAL_CHARS and not any(c.isspace() for c in s))
    # Plain substring tests first (fast), the regular expression only when one hits: most texts hold no secret.
    needles = forms | {s[:PARTIAL_CHARS] for s in cuttable} | {s[-PARTIAL_CHARS:] for s in cuttable}
    return pattern, tuple(forms), cuttable, tuple(needles)


class Scrubber:
    """Replaces every shape of a fixed set of secrets in text, in JSON values and in a scan outcome."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_CHARS and "\0" not in s}, key=len, reverse=True)
        self._pattern, self._forms, self._cuttable, self._needles = _matcher(tuple(self.secrets))
        self.replaced = 0

    def __bool__(self) -> bool:
        return self._pattern is not None

    @classmethod
    def for_scan(
        cls,
        entry: ServerEntry,
        extra_headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Scrubber:
        """The secrets one server's scan knows (see the module docstring). ``env`` is the stdio child's exact
        environment when given; ``environ`` stands for this process's environment (tests pass their own)."""
        from scanner.models import Transport
        from scanner.registry.secrets import secret_env_name  # the one naming rule; imported late (no cycle)

        environ = os.environ if environ is None else environ
        # A child process could have read what this process holds; a remote server could not (and scrubbing every
        # HTTP server's answer for every held secret would cost a crawl dearly): held secrets are for what runs
        # here, a stdio server or a package on a local port (an HTTP transport with a command).
        runs_here = entry.transport is Transport.STDIO or bool(entry.command)
        secrets: set[str] = held_secrets(environ) if runs_here else set()
        prefix = secret_env_name(entry.name, "")  # FATHOM_SECRET_<SERVER>_: this server's own, always
        for key in [key for key in environ if key.startswith(prefix)]:  # names first: most are not this server's
            if value := environ[key]:
                secrets |= _header_secrets(value)
        secret_headers = {name.lower() for name in entry.credential_headers}
        for name, value in [*entry.headers.items(), *(extra_headers or {}).items()]:
            if secret_name(name) or name.lower() in secret_headers:
                secrets |= _header_secrets(value)
        given = dict(entry.env)
        if env is not None:
            given.update({key: value for key, value in env.items() if key in entry.env or secret_name(key)})
        secrets |= entry_env_secrets(entry, given)
        return cls(secret.strip() for secret in secrets)

    @classmethod
    def for_child(cls, entry: ServerEntry, environ: Mapping[str, str] | None = None) -> Scrubber:
        """The scrubber of a child this process runs (a package, stdio or on a local port; a config's command):
        :meth:`for_scan` of the entry as resolved, so a local-port package's outcome, scanned over HTTP, and its
        stderr tail get the same scrubbing as a stdio server's."""
        return cls.for_scan(entry, environ=environ)

    @classmethod
    def for_headers(
        cls, header_sets: Iterable[Mapping[str, str]], environ: Mapping[str, str] | None = None
    ) -> Scrubber:
        """The secret headers of every set (by name, as :meth:`for_scan` judges them) and every secret this
        process holds: for what one run learns from several credentials (``fathom doctor``'s lanes)."""
        secrets = held_secrets(environ)
        for headers in header_sets:
            for name, value in headers.items():
                if secret_name(name):
                    secrets |= _header_secrets(value)
        return cls(secret.strip() for secret in secrets)

    # --- text and values -----------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """``text`` with every shape of every secret (and what a cut left of one) replaced by :data:`MARK`."""
        if self._pattern is None or not any(needle in text for needle in self._needles):
            return text
        text, count = self._pattern.subn(MARK, text)
        for secret in self._cuttable:
            spans = _cut_spans(text, secret)
            if spans:
                text = _replace_spans(text, spans)
                count += len(spans)
        self.replaced += count
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it (keys included) cleaned by :func:`scanner.wire.clean_str`
        and scrubbed; tuples stay tuples."""
        if isinstance(value, str):
            return self.text(wire.clean_str(value))
        if isinstance(value, Mapping):
            return {self.value(key) if isinstance(key, str) else key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            items = [self.value(item) for item in value]
            return tuple(items) if isinstance(value, tuple) else items
        return value

    def holds_secret(self, value: Any) -> bool:
        """True if any shape of a secret appears anywhere in JSON-like ``value`` (a quick test before a walk)."""
        if self._pattern is None:
            return False
        blob = json.dumps(value, ensure_ascii=False, default=str)
        return any(form in blob for form in self._forms)

    # --- outcomes ------------------------------------------------------------------------------------------

    def outcome(self, outcome: ScanOutcome) -> ScanOutcome:
        """``outcome`` with every server-sent text cleaned (:mod:`scanner.wire`) and scrubbed of the secrets.

        The tool list is rewritten only when a secret shape is in it (so an honest list keeps its exact hash);
        ``extra["secrets_scrubbed"]`` counts the replacements when there were any.
        """
        self.replaced = 0
        tools = outcome.tools
        if tools is not None and self.holds_secret(tools):
            tools = self.value(tools)
        extra = self.value(dict(outcome.extra))
        cleaned = replace(
            outcome,
            detail=self.value(outcome.detail),
            tools=tools,
            server_name=self.value(outcome.server_name),
            server_version=self.value(outcome.server_version),
            protocol_version=self.value(outcome.protocol_version),
            extra=extra,
        )
        if self.replaced:
            cleaned = replace(cleaned, extra={**extra, "secrets_scrubbed": self.replaced})
        return cleaned
