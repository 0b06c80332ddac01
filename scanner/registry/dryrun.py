"""What a dry run prints: every entry's target, with header and variable *names* only, never a value; and the
packages Fathom remembers as too large at this disk budget, which the scan will not install
(:func:`remembered_verdicts`)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from scanner.models import ServerEntry
from scanner.packages.settings import PackageSettings

_BASE_ENV = ("PATH", "LANG")


def entry_to_json(entry: ServerEntry) -> dict[str, Any]:
    """One entry as JSON for ``fathom scan --dry-run --format json``; secrets are reduced to their names."""
    package = dict(entry.package) if entry.package else None
    return {
        "name": entry.name,
        "version": entry.version,
        "transport": str(entry.transport),
        "url": entry.url,
        "command": list(entry.command) if entry.command else None,
        "header_names": sorted(entry.headers),
        "env_names": sorted(name for name in entry.env if name not in _BASE_ENV),
        "anonymous": entry.anonymous,
        "missing_secrets": list(entry.secret_header_names),
        "credential_headers": list(entry.credential_headers),
        "missing_inputs": list(package.get("missing_inputs", [])) if package else [],
        "package": {k: v for k, v in package.items() if k != "missing_inputs"} if package else None,
        "skip": entry.skip,
        "source": entry.source,
        "findings": [finding.to_json() for finding in entry.findings],
    }


def entries_to_json(
    entries: list[ServerEntry] | tuple[ServerEntry, ...], verdicts: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every entry as :func:`entry_to_json`, in input order; with ``verdicts`` (:func:`remembered_verdicts`), each
    also says ``remembered_too_large``: the remembered verdict's detail, or None."""
    rows = [entry_to_json(entry) for entry in entries]
    if verdicts is not None:
        for row in rows:
            row["remembered_too_large"] = verdicts.get(row["name"])
    return rows


def remembered_verdicts(
    entries: list[ServerEntry] | tuple[ServerEntry, ...], settings: PackageSettings
) -> dict[str, str]:
    """Entry name -> detail, for each package the scan would run that is remembered as ``too_large`` at this
    disk budget (``--retry-too-large`` not given): it will be recorded so again without being installed. Reads
    the cache's state files only; creates nothing."""
    from scanner.packages.cache import PackageCache
    from scanner.packages.sandbox import remembered_too_large

    root = settings.cache()
    if not (root / "state").is_dir():
        return {}
    cache = PackageCache(root)
    found = {}
    for entry in entries:
        if entry.skip or not entry.package or not entry.package.get("spec"):
            continue
        remembered = remembered_too_large(entry, cache, settings)
        if remembered is not None:
            found[entry.name] = remembered.detail
    return found


def _counts(counter: Counter[str]) -> str:
    return " · ".join(
        f"{name} {count:,}" for name, count in sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    )


_SPECIFIC = re.compile(r"\s*\([^)]*\)")  # "package (npm @a/b): needs ..." -> "package: needs ..."


SHOWN_REASONS = 8  # a registry's dry run has ~30 skip reasons: the most frequent, then how many more


def skip_reasons(skips: Counter[str], *, width: int | None = None, shown: int = SHOWN_REASONS) -> list[str]:
    """One line per skip reason, most frequent first, its count before it; each wrapped to ``width`` under its
    own text; past ``shown`` reasons, one line counting the rest (every entry's reason is in ``--format json``)."""
    import textwrap

    ordered = sorted(skips.items(), key=lambda item: (-item[1], item[0]))
    digits = len(f"{ordered[0][1]:,}") if ordered else 1
    lines: list[str] = []
    for reason, count in ordered[:shown]:
        lead = f"  {count:>{digits},}  "
        if width is None or width <= len(lead) + 20:
            lines.append(lead + reason)
            continue
        wrapped = textwrap.wrap(reason, width - len(lead), break_long_words=False, break_on_hyphens=False)
        lines.append(lead + wrapped[0])
        lines += [" " * len(lead) + part for part in wrapped[1:]]
    rest = ordered[shown:]
    if rest:
        more = sum(count for _, count in rest)
        noun = "reason" if len(rest) == 1 else "reasons"
        entries = "entry" if more == 1 else "entries"
        lines.append(f"  and {len(rest):,} other {noun} ({more:,} {entries}; each entry's: --format json)")
    return lines


def totals(
    entries: list[ServerEntry] | tuple[ServerEntry, ...],
    verdicts: dict[str, str] | None = None,
    *,
    width: int | None = None,
) -> list[str]:
    """The lines that end a dry run: entries by transport, by package registry type, skipped by reason (the
    reason without the entry's own specifics, so like skips add up; :func:`skip_reasons`, wrapped to ``width``),
    and the packages remembered as too large (``verdicts``, :func:`remembered_verdicts`), named: the scan will not
    install them."""
    transports = Counter(str(entry.transport) for entry in entries)
    registries = Counter(
        str(entry.package.get("registryType") or "?")
        for entry in entries
        if entry.package and "identifier" in entry.package
    )
    skips = Counter(_SPECIFIC.sub("", entry.skip) for entry in entries if entry.skip)
    noun = "entry" if len(entries) == 1 else "entries"
    lines = [f"{len(entries):,} {noun} by transport: {_counts(transports) or 'none'}"]
    if registries:
        lines.append(f"packages by registry type: {_counts(registries)}")
    scanned = len(entries) - sum(skips.values())
    lines.append(f"would scan {scanned:,}; would skip {sum(skips.values()):,}" + (", by reason:" if skips else ""))
    lines += skip_reasons(skips, width=width)
    if verdicts:
        named = ", ".join(sorted(verdicts)[:20]) + (f" and {len(verdicts) - 20:,} more" if len(verdicts) > 20 else "")
        lines.append(
            f"will not install {len(verdicts):,} remembered as too large (recorded too_large; a larger "
            f"--disk-limit-mb or --retry-too-large installs them again): {named}"
        )
    return lines


def with_refusals(entries: list[ServerEntry], *, allow_private: bool) -> list[ServerEntry]:
    """``entries`` with the URLs the scan's address policy will refuse marked as skipped, so a dry run never
    counts as "would scan" a loopback or private address the real scan refuses without ``--allow-private``. Only
    what is known without DNS is marked (:func:`scanner.registry.address.offline_refusal`)."""
    from scanner.registry.address import offline_refusal

    marked: list[ServerEntry] = []
    for entry in entries:
        reason = None if entry.skip or not entry.url else offline_refusal(entry.url, allow_private=allow_private)
        if reason is not None:
            # The specifics go in parentheses, which the totals leave out, so like refusals add up.
            why, _, permit = reason.partition("; ")
            entry = replace(entry, skip=f"address refused ({why})" + (f": {permit}" if permit else ""))
        marked.append(entry)
    return marked
