"""Will it load? One verdict per client for a tool list: loads it, drops some tools, or refuses the whole list.

Built from every finding whose details name the clients a shape breaks and how (``details["clients"]``:
``{"client", "effect", "error"}``, effect ``refuses`` or ``drops``): the MCP8xx rules (:mod:`scanner.rules.
clients_reject`, :mod:`scanner.rules.clients_limits`) and, catalogue 6, MCP101 (a name the APIs refuse) and
MCP101/MCP201/MCP205/MCP214/MCP216 for a list that is not valid MCP (:func:`verdict_codes`). A refusal the client
has since stopped (``DATED_NOTES``) decides nothing and becomes a dated note (``notes``); ``EARLIER`` adds the note
of an earlier behaviour beside the current one. :data:`REJECT_CLIENTS` is the one table of clients a verdict is
given for, in display order; ``claude-code``, ``cursor`` and ``gemini-cli`` are the same clients as the cost rows
of :mod:`scanner.measure.clients` (same keys; the cost rows are a separate table there).

A client no rule names "loads": Fathom knows of no refusal, which is not a promise that it loads. Only stable rules
decide a verdict (``state``); findings of ``preview`` rules are kept apart (``preview_state``, ``preview_reasons``)
and never fail a gate, as rules.md says of preview findings. :func:`render_text`, :func:`render_markdown` and
:func:`to_json` are the verdict block every format shows; :func:`compact` is the leaderboard's one-cell form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from typing import Any, Literal

from scanner.errors import InputError
from scanner.rules.clients_reject import (  # the client table lives with the rules that name it
    CLIENT_KEYS,
    REJECT_CLIENTS,
    RejectClient,
    client_label,
)
from scanner.textsafe import markdown_text

State = Literal["loads", "drops", "refuses"]
STATES: tuple[State, ...] = ("loads", "drops", "refuses")
_RANK: dict[str, int] = {"loads": 0, "drops": 1, "refuses": 2}
FAMILY = "MCP8"
OTHER_CODES = ("MCP101", "MCP201", "MCP205", "MCP214", "MCP216")
"""Rules outside MCP8xx whose findings can name clients (catalogue 6): MCP101 for a name the APIs refuse, and these
when the list is not valid MCP (:func:`scanner.rules.clients_reject.sdk_list_clients`)."""


def verdict_codes() -> tuple[str, ...]:
    """Every rule whose findings can decide a verdict: the MCP8xx tool and list rules, and :data:`OTHER_CODES`."""
    from scanner.rules import RULES

    own = [code for code in RULES if code.startswith(FAMILY) and RULES[code].scope in ("tool", "list")]
    return (*own, *OTHER_CODES)


__all__ = ["CLIENT_KEYS", "REJECT_CLIENTS", "RejectClient", "Verdict", "client_label", "verdicts"]


@dataclass(frozen=True)
class Verdict:
    """One client's verdict on one list. ``dropped``: the tools it leaves out (``drops``); ``reasons``: one line
    per finding that decided it (code, tool, the client's own error); the ``preview_*`` fields say the same of
    preview rules' findings, when they make it worse."""

    client: str
    label: str
    state: State = "loads"
    dropped: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    preview_state: State | None = None
    preview_dropped: tuple[str, ...] = ()
    preview_reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Dated notes: refusals of this shape the client has since stopped (they decide nothing)."""

    @property
    def covers(self) -> str:
        """What the public sources behind the verdict cover of this client (versions, dates)."""
        found = CLIENT_KEYS.get(self.client)
        return found.covers if found is not None else ""

    def phrase(self) -> str:
        """``loads``, ``drops 2 tools`` or ``refuses the whole list``."""
        return _phrase(self.state, self.dropped)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "covers": self.covers,
            "state": self.state,
            "verdict": self.phrase(),
            "dropped": list(self.dropped),
            "reasons": list(self.reasons),
            "rules": list(self.codes),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        if self.preview_state is not None:
            out["preview"] = {
                "state": self.preview_state,
                "verdict": _phrase(self.preview_state, self.preview_dropped),
                "dropped": list(self.preview_dropped),
                "reasons": list(self.preview_reasons),
            }
        return out


def _phrase(state: str, dropped: Sequence[str]) -> str:
    if state == "refuses":
        return "refuses the whole list"
    if state == "drops":
        return f"drops {len(dropped)} tool{'' if len(dropped) == 1 else 's'}"
    return "loads"


@dataclass
class _Tally:
    state: str = "loads"
    dropped: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)

    def add(self, effect: str, tool: str | None, reason: str, code: str) -> None:
        if _RANK.get(effect, 0) > _RANK[self.state]:
            self.state = effect
        if effect == "drops" and tool is not None and tool not in self.dropped:
            self.dropped.append(tool)
        if reason not in self.reasons:
            self.reasons.append(reason)
        if code not in self.codes:
            self.codes.append(code)


def _preview(code: str) -> bool:
    from scanner.rules import RULES

    rule = RULES.get(code)
    return rule is not None and rule.status != "stable"


def client_effects(finding: Any) -> list[tuple[str, str, str]]:
    """(client, effect, error) for each client a finding's details name, whatever its family (MCP8xx; MCP101 for a
    name the APIs refuse; MCP101/MCP201/MCP205/MCP214/MCP216 for a list that is not valid MCP); nothing for details that
    are not that shape (a stored finding is read as data, never trusted). A finding stored without details
    (history's finding events) gets its rule's clients from ``EFFECTS``, without the error text."""
    code = str(getattr(finding, "code", ""))
    details = getattr(finding, "details", None)
    entries = details.get("clients") if isinstance(details, Mapping) else None
    if not details:
        from scanner.rules.clients_reject import EFFECTS

        return [(client, effect, "") for client, effect in EFFECTS.get(code, ())]
    out = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping):
            continue
        client, effect, error = str(entry.get("client")), entry.get("effect"), entry.get("error")
        if client in CLIENT_KEYS and effect in ("refuses", "drops"):
            out.append((client, str(effect), error if isinstance(error, str) else ""))
    return out


def verdicts(findings: Iterable[Any]) -> tuple[Verdict, ...]:
    """Every client's verdict on the list these findings were found in: every client of :data:`REJECT_CLIENTS`, in
    order (a client key a stored finding names that is not in the table is ignored). A finding of a rule in
    ``DATED_NOTES`` (a refusal the client has since stopped) decides nothing: it adds the dated note."""
    from scanner.rules.clients_reject import DATED_NOTES, EARLIER

    stable: dict[str, _Tally] = {}
    preview: dict[str, _Tally] = {}
    notes: dict[str, list[str]] = {}
    for finding in findings:
        code = str(getattr(finding, "code", ""))
        dated, earlier = DATED_NOTES.get(code, {}), EARLIER.get(code, {})
        for client, effect, error in client_effects(finding):
            note = dated.get(client) or earlier.get(client)
            if note is not None:
                said = f"{finding.code}: {note}"
                if said not in notes.setdefault(client, []):
                    notes[client].append(said)
            if client in dated:
                continue
            tool = finding.tool
            where = f" '{tool}'" if tool else ""
            reason = f"{finding.code}{where}: {error}" if error else f"{finding.code}{where}"
            tallies = preview if _preview(finding.code) else stable
            tallies.setdefault(client, _Tally()).add(effect, tool, reason, finding.code)
    out = []
    for key in CLIENT_KEYS:
        main = stable.get(key, _Tally())
        extra = preview.get(key)
        verdict = Verdict(
            client=key,
            label=client_label(key),
            state=main.state,  # type: ignore[arg-type]
            dropped=tuple(main.dropped),
            reasons=tuple(main.reasons),
            codes=tuple(main.codes),
            notes=tuple(notes.get(key, ())),
        )
        if extra is not None:
            worse = extra.state if _RANK[extra.state] >= _RANK[main.state] else main.state
            dropped = tuple(dict.fromkeys([*main.dropped, *extra.dropped]))
            verdict = replace(
                verdict,
                preview_state=worse,  # type: ignore[arg-type]
                preview_dropped=dropped if worse == "drops" else (),
                preview_reasons=tuple(extra.reasons),
            )
        out.append(verdict)
    return tuple(out)


# --- rendering (each format calls one of these) ---------------------------------------------------------------


def to_json(found: Sequence[Verdict]) -> dict[str, Any]:
    """The ``clients`` object of JSON outputs: client key -> verdict."""
    return {verdict.client: verdict.to_json() for verdict in found}


def render_text(found: Sequence[Verdict], *, reasons: int = 2) -> list[str]:
    """The verdict block of ``check``'s text output: one line per client, the reasons under a client that does not
    load the list (at most ``reasons`` each, then how many more)."""
    if not found:
        return []
    if _all_load(found):
        lines = ["Will it load?", f"  Every client loads the whole list: {', '.join(v.label for v in found)}."]
        return lines + [f"  Note: {note}" for verdict in found for note in verdict.notes]
    width = max(len(verdict.label) for verdict in found)
    lines = ["Will it load?", *[f"  {sentence}" for sentence in summary(found)]]
    for verdict in found:
        line = f"  {verdict.label.ljust(width)}  {verdict.phrase()}"
        if verdict.dropped:
            line += f" ({', '.join(verdict.dropped[:5])}{', …' if len(verdict.dropped) > 5 else ''})"
        if verdict.preview_state is not None and verdict.preview_state != verdict.state:
            line += f"; preview rules: {_phrase(verdict.preview_state, verdict.preview_dropped)}"
        lines.append(line)
        shown = [*verdict.reasons, *verdict.preview_reasons]
        lines += [f"      {reason}" for reason in shown[:reasons]]
        if len(shown) > reasons:
            lines.append(f"      and {len(shown) - reasons} more")
        lines += [f"      Note: {note}" for note in verdict.notes]
    return lines


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def summary(found: Sequence[Verdict]) -> list[str]:
    """One sentence per outcome: the provider APIs that refuse the list together, then the applications
    (``Anthropic API and OpenAI API refuse the whole list.``, ``Claude Desktop and Codex refuse the whole list.``),
    then each client that drops tools (``Claude Desktop drops 14 tools.``). Stable rules only; empty when every
    client loads the list."""
    out = []
    for apis in (True, False):
        refusing = [v.label for v in found if v.state == "refuses" and v.client.endswith("-api") == apis]
        if refusing:
            out.append(f"{_and(refusing)} {'refuses' if len(refusing) == 1 else 'refuse'} the whole list.")
    for verdict in found:
        if verdict.state == "drops":
            out.append(f"{verdict.label} {verdict.phrase()}.")
    return out


def _all_load(found: Sequence[Verdict]) -> bool:
    """No client refuses or drops anything, not even by a preview rule: one line says so."""
    return all(verdict.state == "loads" and verdict.preview_state in (None, "loads") for verdict in found)


def render_markdown(found: Sequence[Verdict], escape: Callable[[str], str] | None = None) -> list[str]:
    """The verdict table of ``check --format markdown``; ``escape`` makes a cell's text safe (by default the one
    Markdown escaping, :func:`scanner.textsafe.markdown_text`)."""
    cell = escape or markdown_text
    if not found:
        return []
    if _all_load(found):
        return [
            "### Will it load?",
            "",
            f"Every client loads the whole list: {cell(', '.join(v.label for v in found))}.",
            "",
        ]
    lines = ["### Will it load?", "", *[cell(sentence) for sentence in summary(found)], ""]
    lines += ["| client | verdict | why | sources cover |", "|---|---|---|---|"]
    for verdict in found:
        said = verdict.phrase()
        if verdict.preview_state is not None and verdict.preview_state != verdict.state:
            said += f" (preview rules: {_phrase(verdict.preview_state, verdict.preview_dropped)})"
        why = "; ".join([*verdict.reasons, *verdict.preview_reasons][:3]) or "no refusal known to Fathom"
        lines.append(f"| {cell(verdict.label)} | {cell(said)} | {cell(why)} | {cell(verdict.covers)} |")
    lines.append("")
    return lines


def compact(found: Sequence[Verdict]) -> str:
    """The leaderboard's cell: ``loads everywhere``, or the clients that do not load the list whole
    (``refused: Anthropic API, Claude Code; drops 2: VS Code (Copilot)``)."""
    refused = [verdict.label for verdict in found if verdict.state == "refuses"]
    dropping = [f"{verdict.label} ({len(verdict.dropped)})" for verdict in found if verdict.state == "drops"]
    parts = []
    if refused:
        parts.append("refused by " + ", ".join(refused))
    if dropping:
        parts.append("tools dropped by " + ", ".join(dropping))
    return "; ".join(parts) if parts else "loads everywhere"


# --- the gate ---------------------------------------------------------------------------------------------------


def parse_clients(value: object, where: str = "--fail-on-reject") -> tuple[str, ...]:
    """``claude-code,openai-api`` (or a list) -> client keys, ``all`` for every client of :data:`REJECT_CLIENTS`;
    an unknown name is an input error naming the nearest known one."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    out: list[str] = []
    for item in items:
        name = str(item).strip().lower()
        if not name:
            continue
        if name == "all":  # every client Fathom knows
            out += [key for key in CLIENT_KEYS if key not in out]
            continue
        if name not in CLIENT_KEYS:
            near = get_close_matches(name, list(CLIENT_KEYS), n=1, cutoff=0.0)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise InputError(f"{where}: no client {name!r}{hint} (known: {', '.join(CLIENT_KEYS)}, or all)")
        if name not in out:
            out.append(name)
    if not out:
        raise InputError(f"{where} needs at least one client ({', '.join(CLIENT_KEYS)})")
    return tuple(out)


def rejected_by(found: Sequence[Verdict], clients: Sequence[str]) -> list[Verdict]:
    """The verdicts of ``clients`` that refuse or drop anything (stable rules only)."""
    return [verdict for verdict in found if verdict.client in clients and verdict.state != "loads"]


def result_verdicts(result: Any) -> tuple[Verdict, ...]:
    """The verdicts on a ``fathom check`` result: from every finding the score counts (shown and ignored alike:
    ignoring a finding does not make a client load the list); nothing for a list that was not measured."""
    if getattr(result, "report", None) is None:
        return ()
    return verdicts(result.scored_findings)
