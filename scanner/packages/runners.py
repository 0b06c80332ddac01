"""Runners a scan needs but this machine lacks, said once before connecting (and in a dry run).

The resolver (:func:`scanner.registry.packages.resolve_packages`) already marks each entry whose runner is not
on ``PATH``: it is skipped with ``package["skip_outcome"] == "runner_missing"``, so it is recorded as
``runner_missing`` rather than blamed on the server. This module sums those up for one warning per runner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from scanner import confine
from scanner.models import Outcome, ScanOutcome, ServerEntry
from scanner.packages.diagnose import REACH_FIX, setup_detail
from scanner.packages.environment import OWN, installer_settings
from scanner.packages.install import install_command
from scanner.packages.installnet import install_network, runner_of
from scanner.packages.settings import PackageSettings

DAEMON_TIMEOUT_S = 15


def skip_outcome(entry: ServerEntry) -> Outcome:
    """The outcome to record for a skipped entry: ``delisted`` / ``deprecated`` (the registry said so),
    ``runner_missing``, ``needs_configuration`` or ``skipped``."""
    if entry.registry_status in ("deleted", "deprecated"):
        return Outcome.DELISTED if entry.registry_status == "deleted" else Outcome.DEPRECATED
    if entry.package:
        value = entry.package.get("skip_outcome")
        if isinstance(value, str) and value in Outcome.__members__.values():
            return Outcome(value)
    return Outcome.SKIPPED


def missing_runners(entries: Iterable[ServerEntry]) -> dict[str, int]:
    """Each missing runner and how many entries need it, e.g. ``{"uvx": 170}`` (empty when none is missing)."""
    counts: Counter[str] = Counter()
    for entry in entries:
        if skip_outcome(entry) is Outcome.RUNNER_MISSING and entry.package:
            counts[str(entry.package.get("runner"))] += 1
    return dict(sorted(counts.items()))


def _enterable(path: str) -> bool:
    """Whether a user with no groups in common can start ``path`` as it is named: every folder above the name
    searchable (a link's own folder is traversed before the link is followed), and its target reachable."""
    return confine.folders_above_reachable(Path(path)) and confine.reachable(Path(path))


def _interpreter(program: str, path: str) -> str | None:
    """The interpreter ``program``'s ``#!`` line starts (``#!/usr/bin/env node``: ``node`` looked up on
    ``path``, as ``env`` does), or None."""
    try:
        with open(os.path.realpath(program), "rb") as handle:
            head = handle.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) != "env":
        return words[0]
    name = next((word for word in words[1:] if not word.startswith("-")), None)
    return shutil.which(name, path=path) if name else None


def out_of_children_reach(command: Sequence[str], path: str) -> str | None:
    """Run as root, what of ``command``'s runner its child's user cannot start (the runner, or the interpreter
    its ``#!`` line names, under a 0700 folder such as ``/root/.nvm``), in a few words; None when it can, when
    Fathom is not root, or when the runner is not found at all (recorded ``runner_missing`` as before)."""
    if not confine.enabled() or not command:
        return None
    found = shutil.which(command[0], path=path)
    if found is None:
        return None
    if not _enterable(found):
        return f"{command[0]} ({found})"
    interpreter = _interpreter(found, path)
    if interpreter is not None and not _enterable(interpreter):
        return f"{os.path.basename(interpreter)} ({interpreter}, which {command[0]} runs)"
    return None


def unreachable_outcome(entry: ServerEntry, what: str) -> ScanOutcome:
    """The ``runner_missing`` outcome of a package whose runner its user cannot reach
    (:func:`out_of_children_reach`)."""
    said = f"run as root, packages run as an unprivileged user of their own, which cannot reach {what}"
    return ScanOutcome(
        outcome=Outcome.RUNNER_MISSING,
        transport=entry.transport.value,
        detail=setup_detail(said, REACH_FIX),
        extra={"setup": "runner_out_of_reach"},
    )


def warning_lines(entries: Iterable[ServerEntry], settings: PackageSettings | None = None) -> list[str]:
    """One line per missing runner, and per ``--pass-env`` name that is not set, for the start of a scan or a
    dry run."""
    entries = list(entries)
    lines = []
    problems: Counter[str] = Counter()
    for entry in entries:
        if skip_outcome(entry) is Outcome.RUNNER_MISSING and entry.package and entry.package.get("runner_problem"):
            problems[str(entry.package["runner_problem"])] += 1
    for runner, count in missing_runners(entries).items():
        if not any(problem.startswith(f"{runner} ") for problem in problems):
            lines.append(
                f"{runner} is not on PATH: {count} {'entry' if count == 1 else 'entries'} will be recorded "
                "runner_missing"
            )
    lines.extend(
        f"{problem}: {count} {'entry' if count == 1 else 'entries'} will be recorded runner_missing"
        for problem, count in sorted(problems.items())
    )
    if settings is not None and any(entry.package and not entry.skip for entry in entries):
        unreachable: Counter[str] = Counter()
        for entry in entries:
            if entry.package and not entry.skip:
                what = out_of_children_reach(entry.command, (entry.env or {}).get("PATH") or os.defpath)
                if what is not None:
                    unreachable[what] += 1
        lines.extend(
            f"run as root, packages run as users of their own, who cannot reach {what}: {count} "
            f"{'entry' if count == 1 else 'entries'} will be recorded runner_missing ({REACH_FIX})"
            for what, count in sorted(unreachable.items())
        )
        if confine.enabled() and not confine.folders_above_reachable(settings.cache()):
            lines.append(
                f"run as root, packages run as users of their own, who cannot reach the package cache "
                f"{settings.cache()}: every package will be recorded spawn_error (give --cache-dir a folder every "
                "user can traverse, e.g. /var/cache/fathom)"
            )
        source = settings.source()
        for name in settings.pass_env:
            if name in OWN:
                lines.append(f"--pass-env {name}: Fathom sets {name} for every package itself; not passed")
            elif not source.get(name):
                lines.append(f"--pass-env {name} is not set: nothing passed")
    return lines


def namespace_line(entries: Iterable[ServerEntry]) -> str | None:
    """One line for the start of a scan or a dry run when a child would start and cannot get a PID namespace of
    its own (:func:`scanner.confine.namespaces`): what it can then see; None when it can or none starts."""
    if not any(entry.command and not entry.skip for entry in entries):
        return None
    holds, why = confine.namespaces()
    if holds:
        return None
    return (
        f"PID namespaces {why}: a child can read its siblings' and Fathom's command lines, and signal them unless "
        "each runs as a user of its own; it sees the host's terminals and SysV IPC, reaches what listens on the "
        'host\'s loopback, and no cap bounds its processes (docs/registry.md, "Which platform isolates what")'
    )


def network_line(entries: Iterable[ServerEntry], environ: Mapping[str, str] | None = None) -> str | None:
    """One line for the start of a scan or a dry run when a package will run (over stdio or on a local port) after
    its install step (npx, uvx) or a ``--run-commands`` command will run: each in a network of its own, with a
    route out through slirp4netns (:func:`scanner.confine.outbound`) or only its own loopback (``none: ...`` and
    why); or, where the kernel refuses a network namespace, what it reaches on the host. The install step gets a
    network of its own with the route out too, unless it keeps the host's (:func:`install_network`, from the
    installer settings of ``environ``, None: this process's): said, with why. None when no such child runs, or when
    namespaces are refused (:func:`namespace_line` says it)."""
    entries = list(entries)
    if not confine.namespaces()[0]:
        return None
    packages = any(entry.package and not entry.skip and install_command(entry) is not None for entry in entries)
    commands = any(entry.command and not entry.package and not entry.skip for entry in entries)
    if not packages and not commands:
        return None
    kept = _installs_kept(entries, os.environ if environ is None else environ)
    installs = packages and not kept
    who = " and ".join(
        [
            *(["a package's install step and run (stdio or on a local port)"] if installs else []),
            *(["a package's run (stdio or on a local port)"] if packages and not installs else []),
            *(["a --run-commands command"] if commands else []),
        ]
    )
    holds, why = confine.own_network()
    if not holds:
        return (
            f"network namespaces {why}: {who} reaches what listens on the host's loopback (Fathom's database, the "
            'user\'s own services) and its abstract unix sockets (docs/registry.md, "Which platform isolates what")'
        )
    install = (
        f"; a package's install step keeps this machine's network, reaching what listens on its loopback ({kept})"
        if packages and kept
        else ""
    )
    out, said = confine.outbound()
    if out:
        return (
            f"{who}: a network of its own, {said} (what listens on this machine's other addresses answers it as "
            f'it would any host; docs/registry.md, "Which platform isolates what"){install}'
        )
    return (
        f"{who}: a network of its own with only its own loopback, outbound {said}: one that needs the internet at "
        f'start is recorded "stopped for want of a network" (docs/registry.md, "Which platform isolates what")'
        f"{install}"
    )


def _installs_kept(entries: Sequence[ServerEntry], environ: Mapping[str, str]) -> str:
    """Why the install steps of ``entries`` that keep the host's network keep it (``npx: why; uvx: why``), or
    "" when every one gets a network of its own (:func:`install_network`)."""
    passed, _ = installer_settings(environ)
    said: dict[str, str] = {}
    for entry in entries:
        step = install_command(entry) if entry.package and not entry.skip else None
        if step is None or (runner := runner_of(step)) in said:
            continue
        own, why = install_network(runner, {**passed, **entry.env})
        if not own:
            said[runner] = why
    return "; ".join(f"{runner}: {why}" for runner, why in sorted(said.items()))


def check_network_line() -> str | None:
    """One line for ``check --stdio`` / ``check -- CMD`` when its server keeps the host's network (no route out
    through slirp4netns: :func:`scanner.confine.outbound`, ``check/run.py``); None when it gets a
    network of its own."""
    out, said = confine.outbound()
    if out:
        return None
    why = said.removeprefix("none: ")
    return (
        f"the server keeps this machine's network (no user-mode network stack: {why}): it reaches what listens on "
        'this machine\'s loopback and its abstract unix sockets (docs/registry.md, "Which platform isolates what")'
    )


def check_daemons(
    entries: list[ServerEntry],
    environ: Mapping[str, str],
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> list[ServerEntry]:
    """``entries`` with every OCI entry whose runner's daemon does not answer turned into a ``runner_missing``
    skip (said once by :func:`warning_lines`), instead of one ``install_failed`` per image. One ``docker info``
    (or ``podman info``) per runner, only when an OCI entry would run."""
    wanted = {
        str(entry.package.get("runner"))
        for entry in entries
        if entry.package and not entry.skip and entry.package.get("registryType") == "oci"
    }
    problems: dict[str, str] = {}
    for runner in sorted(wanted):
        found = shutil.which(runner, path=environ.get("PATH") or os.defpath)
        if found is None:
            continue
        said = ""
        try:
            done = run(
                [found, "info", "--format", "{{.ServerVersion}}"],
                capture_output=True,
                text=True,
                timeout=DAEMON_TIMEOUT_S,
                check=False,
                env={"PATH": environ.get("PATH") or os.defpath, "HOME": environ.get("HOME") or "/"},
            )
            answered = done.returncode == 0
            said = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "")
        except subprocess.TimeoutExpired:
            answered, said = False, f"no answer in {DAEMON_TIMEOUT_S} s"
        except OSError as exc:
            answered, said = False, str(exc.strerror or exc)
        if not answered:
            problems[runner] = (
                f"{runner} daemon does not answer ({said[:200]})" if said else f"{runner} daemon does not answer"
            )
    if not problems:
        return entries
    out: list[ServerEntry] = []
    for entry in entries:
        runner = str((entry.package or {}).get("runner"))
        if entry.package and not entry.skip and entry.package.get("registryType") == "oci" and runner in problems:
            package = {**entry.package, "skip_outcome": "runner_missing", "runner_problem": problems[runner]}
            entry = replace(entry, skip=f"runner missing: {problems[runner]}", package=package)
        out.append(entry)
    return out
