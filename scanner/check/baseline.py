"""A check's baseline: the tool list, findings and costs of a release, saved as versioned JSON, and the comparison
of a later check against it (``fathom check --save-baseline FILE`` / ``--baseline FILE``).

Works from files alone, no database: the baseline keeps each tool's cost per provider and content hash, so a
later check can say which tools were added, removed or changed and what each did to the cost, and which
findings are new or fixed. Findings are matched by (rule, tool) and counted, because a finding's pointer and
message move when a schema is edited while the fault stays the same.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scanner.check.result import BaselineFinding, CheckResult, Comparison, TokenDelta, ToolDelta
from scanner.errors import InputError
from scanner.models import Finding, Severity, canonical_json

BASELINE_FORMAT = 1
"""Bump when a key changes meaning; :func:`load` refuses other formats with a clear message."""


def _tool_sha(tool: Any) -> str:
    return hashlib.sha256(canonical_json(tool).encode("utf-8")).hexdigest()


def _field_shas(tool: Any) -> dict[str, str]:
    """Each top-level field of a tool but its name, hashed, so a later check can say what changed."""
    if not isinstance(tool, dict):
        return {}
    return {
        str(key): hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
        for key, value in tool.items()
        if key != "name"
    }


# What a changed tool's fields are called, in the order a reader wants them.
_FIELD_ORDER = ("description", "inputSchema", "annotations", "title", "outputSchema")


def _changed_fields(before: Any, after: Mapping[str, str]) -> tuple[str, ...]:
    if not isinstance(before, dict) or not all(isinstance(v, str) for v in before.values()):
        return ()
    keys = {str(key) for key in before} | set(after)
    changed = [key for key in keys if before.get(key) != after.get(key)]
    return tuple(sorted(changed, key=lambda key: (_FIELD_ORDER.index(key) if key in _FIELD_ORDER else 99, key)))


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "rule": finding.rule,
        "severity": finding.severity.label,
        "tool": finding.tool,
        "pointer": finding.pointer,
        "message": finding.message,
    }


def baseline_dict(result: CheckResult) -> dict[str, Any]:
    """The baseline document of a measured check (see the module docstring)."""
    from scanner import __version__

    report = result.report
    if report is None or result.tools is None:
        raise InputError("no tool list was measured, so there is no baseline to save")
    score = result.score
    return {
        "fathom_baseline": BASELINE_FORMAT,
        "fathom_version": __version__,
        "score_version": score.version if score is not None else None,
        "source": result.source,
        "toolset_sha256": report.toolset_sha256,
        "tools_count": report.tools_count,
        "score": score.score if score is not None else None,
        "tokens": {provider: count.tokens for provider, count in report.tokens.items()},
        "tools": [
            {
                "name": cost.name,
                "sha256": _tool_sha(result.tools[cost.index]),
                "fields": _field_shas(result.tools[cost.index]),
                "tokens": dict(cost.tokens),
            }
            for cost in report.tool_costs
        ],
        "findings": [_finding_json(finding) for finding in report.findings],
        "ignored": [_finding_json(item.finding) | {"reason": item.reason} for item in result.ignored],
    }


def save(result: CheckResult, path: Path) -> None:
    """Write the baseline of ``result`` to ``path`` (never through a symlink: :mod:`scanner.safefile`)."""
    from scanner import safefile

    text = json.dumps(baseline_dict(result), indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    safefile.write_text(path, text, label="--save-baseline", failed=f"cannot write the baseline {path}")


def load(path: Path) -> dict[str, Any]:
    """Read a baseline file; anything that is not one of ours is an input error (exit 2): a FIFO or device, a
    file over the size cap, binary or deeply nested content, ``NaN``, or a key of the wrong type."""
    from scanner import safefile

    label = f"--baseline {path}"
    data = safefile.load_json(path, label=label, max_bytes=safefile.MAX_BASELINE_BYTES)
    if not isinstance(data, dict) or "fathom_baseline" not in data:
        raise InputError(f"{label} is not a fathom baseline (write one with --save-baseline)")
    if data["fathom_baseline"] != BASELINE_FORMAT:
        found = data["fathom_baseline"]
        shown = repr(found) if isinstance(found, int | float) and not isinstance(found, bool) else "not a number"
        raise InputError(
            f"{label} is baseline format {shown}; this fathom reads format "
            f"{BASELINE_FORMAT}: save it again with --save-baseline"
        )
    _check_shape(data, label)
    return data


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_shape(data: Mapping[str, Any], label: str) -> None:
    """Every key :func:`compare` reads has the type it expects, or one InputError line naming it."""
    for key, kind in (("tokens", dict), ("tools", list), ("findings", list)):
        if not isinstance(data.get(key), kind):
            raise InputError(f"{label}: {key!r} is missing or not a JSON {'object' if kind is dict else 'array'}")
    for provider, count in data["tokens"].items():
        if not _is_count(count):
            raise InputError(f"{label}: tokens[{provider!r}] is not a whole number of tokens")
    score = data.get("score")
    if score is not None and (not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 100):
        raise InputError(f"{label}: 'score' is not a number from 0 to 100")
    for number, tool in enumerate(data["tools"]):
        if not isinstance(tool, dict):
            raise InputError(f"{label}: tools[{number}] is not a JSON object")
        if not isinstance(tool.get("name", ""), str) or not isinstance(tool.get("sha256", ""), str):
            raise InputError(f"{label}: tools[{number}] has a name or sha256 that is not a string")
        fields = tool.get("fields", {})
        if not isinstance(fields, dict) or not all(isinstance(sha, str) for sha in fields.values()):
            raise InputError(f"{label}: tools[{number}].fields is not an object of hashes")
        tokens = tool.get("tokens", {})
        if not isinstance(tokens, dict) or not all(_is_count(count) for count in tokens.values()):
            raise InputError(f"{label}: tools[{number}].tokens is not an object of whole numbers of tokens")
    for number, finding in enumerate(data["findings"]):
        if not isinstance(finding, dict) or not isinstance(finding.get("code"), str):
            raise InputError(f"{label}: findings[{number}] is not an object with a code")
        for key in ("rule", "severity", "message"):
            if not isinstance(finding.get(key, ""), str):
                raise InputError(f"{label}: findings[{number}].{key} is not a string")
        if finding.get("tool") is not None and not isinstance(finding["tool"], str):
            raise InputError(f"{label}: findings[{number}].tool is not a string or null")


def _keyed(names: Iterable[str]) -> list[str]:
    """Tool names made unique (a duplicate name gets ``#2``, ``#3``...), so duplicates are compared one by one."""
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _stored_finding(item: Any) -> BaselineFinding | None:
    if not isinstance(item, dict) or not isinstance(item.get("code"), str):
        return None
    try:
        severity = Severity.parse(str(item.get("severity", "note")))
    except KeyError:
        severity = Severity.NOTE
    tool = item.get("tool")
    return BaselineFinding(
        code=item["code"],
        rule=str(item.get("rule", "")),
        severity=severity,
        tool=tool if isinstance(tool, str) else None,
        message=str(item.get("message", "")),
    )


def compare(baseline: Mapping[str, Any], result: CheckResult, *, path: str = "") -> Comparison:
    """This check against ``baseline`` (a :func:`load` document)."""
    report = result.report
    assert report is not None and result.tools is not None
    before_tokens = {p: int(n) for p, n in baseline["tokens"].items() if isinstance(n, int)}
    tokens = tuple(
        TokenDelta(provider, before_tokens[provider], count.tokens)
        for provider, count in report.tokens.items()
        if provider in before_tokens
    )
    old_tools = [tool for tool in baseline["tools"] if isinstance(tool, dict)]
    old = dict(zip(_keyed(str(tool.get("name", "")) for tool in old_tools), old_tools, strict=True))
    now_costs = list(report.tool_costs)
    now = dict(zip(_keyed(cost.name for cost in now_costs), now_costs, strict=True))
    deltas: list[ToolDelta] = []
    for name, cost in now.items():
        after = dict(cost.tokens)
        if name not in old:
            deltas.append(ToolDelta(name, "added", {}, after))
            continue
        before = {p: int(n) for p, n in dict(old[name].get("tokens") or {}).items() if isinstance(n, int)}
        tool_now = result.tools[cost.index]
        if old[name].get("sha256") != _tool_sha(tool_now):
            fields = _changed_fields(old[name].get("fields"), _field_shas(tool_now))
            deltas.append(ToolDelta(name, "changed", before, after, fields))
    for name, tool in old.items():
        if name not in now:
            before = {p: int(n) for p, n in dict(tool.get("tokens") or {}).items() if isinstance(n, int)}
            deltas.append(ToolDelta(name, "removed", before, {}))
    stored = [found for found in map(_stored_finding, baseline["findings"]) if found is not None]
    was = Counter(found.key for found in stored)
    still = Counter(BaselineFinding.of(finding).key for finding in report.findings)
    new: list[Finding] = []
    budget = Counter(was)
    for finding in report.findings:  # worst first: the first ones over the baseline's count are the new ones
        key = BaselineFinding.of(finding).key
        if budget[key] > 0:
            budget[key] -= 1
        else:
            new.append(finding)
    fixed: list[BaselineFinding] = []
    gone: list[BaselineFinding] = []
    removed = {delta.name for delta in deltas if delta.change == "removed"}
    left = Counter(still)
    for found in stored:
        if left[found.key] > 0:
            left[found.key] -= 1
        elif found.tool is not None and found.tool in removed:
            gone.append(found)  # its tool is gone: nothing was fixed
        else:
            fixed.append(found)
    score = result.score
    # Scores of two formula versions are not comparable: a baseline saved under another one shows no change.
    old_score = baseline.get("score") if score is not None and baseline.get("score_version") == score.version else None
    return Comparison(
        baseline=path,
        source=str(baseline.get("source", "")),
        tokens=tokens,
        tools=tuple(deltas),
        new=tuple(new),
        fixed=tuple(fixed),
        score_before=float(old_score) if isinstance(old_score, int | float) else None,
        score_after=score.score if score is not None else None,
        tools_before=len(old_tools),
        tools_after=report.tools_count,
        gone=tuple(gone),
    )
