"""``fathom check -- npx ...`` / ``-- uvx ...`` as ``fathom scan`` runs a package: the same installer settings
and the same cause classifier, so a scan's result can be reproduced by hand.

A scan hands a package's runner the allow-listed installer settings of Fathom's environment (CA bundles,
proxies, npm/uv/pip index settings: :data:`scanner.packages.environment.INSTALLER_SETTINGS`); ``check`` without
them failed with ``invalid peer certificate: UnknownIssuer`` behind a corporate proxy where the scan had
answered. And a scan reports the telling line of a failure (:mod:`scanner.packages.diagnose`), ``check`` the
last one. :func:`check_entry` and :func:`classify_check` close both gaps for a command whose first word is a
package runner; any other command is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from scanner.models import ScanOutcome, ServerEntry, Transport
from scanner.packages.diagnose import classify
from scanner.packages.environment import INSTALLER_SETTINGS, installer_settings

RUNNERS = {"npx": "npm", "bunx": "npm", "pnpx": "npm", "uvx": "pypi", "docker": "oci", "podman": "oci"}


def runner_of(entry: ServerEntry) -> str | None:
    """The package runner ``entry``'s command starts (``npx``, ``uvx``, ...), or None."""
    if entry.transport is not Transport.STDIO or not entry.command:
        return None
    name = os.path.basename(entry.command[0])
    return name if name in RUNNERS else None


def check_entry(entry: ServerEntry, environ: Mapping[str, str] | None = None) -> ServerEntry:
    """``entry`` with the installer settings a scan passes added to its environment (its own ``--env`` values
    win), when its command is a package runner."""
    if runner_of(entry) is None:
        return entry
    passed, _ = installer_settings(os.environ if environ is None else environ)
    return replace(entry, env={**passed, **entry.env})


def classify_check(entry: ServerEntry, outcome: ScanOutcome) -> ScanOutcome:
    """``outcome`` classified as a scan classifies a package's failure (an ok outcome only gets its texts
    normalised), when ``entry``'s command is a package runner."""
    runner = runner_of(entry)
    if runner is None:
        return outcome
    words = [word for word in entry.command[1:] if not word.startswith("-")]
    if runner in ("docker", "podman"):
        words = words[1:] if words[:1] == ["run"] else words
    facts = {"registryType": RUNNERS[runner], "runner": runner, "spec": words[0] if words else "the package"}
    # What the user handed with --env is never shown; the installer settings (registry URLs) may be.
    secrets = [value for name, value in entry.env.items() if value and name not in INSTALLER_SETTINGS]
    return classify(replace(entry, package=facts), outcome, secrets=secrets)
