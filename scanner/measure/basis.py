"""What a stored measurement of a tool list depends on besides the list itself and the rule catalogue.

The store keeps one measurement of a tool list (its tokens per provider, each tool's cost, its findings) per list
(by ``Toolset.sha256``) and per catalogue (``RULES_VERSION``, a key column of its own). A rescan that finds the same
list reuses that measurement instead of measuring again, which is only right while everything else the numbers
come from is the same too. :func:`measure_basis` names that "everything else" in one short string stored beside
the measurement (``measurements.basis``); a measurement stored under another basis is measured again on the next
scan that meets its list (and a ``rescore`` stamps the basis of what it confirmed).

What goes in, each by a version rather than by hard-coded content, so a change anywhere (another branch's client
row, a new tokenizer) invalidates without anyone remembering to:

- the tokenizers: each stored provider's ``method`` string (which names its tokenizer and version: ``ctok`` and its
  version when installed, else o200k_base with its calibrated factor) and the o200k_base file's sha256;
- :data:`TOKENS_VERSION`, bumped by hand when a provider's view or count changes in a way its method does not say;
- the client table: :data:`scanner.measure.clients.CLIENTS`, every row as it is declared (a row added, removed or
  changed gives another digest);
- the rule catalogue's digest (:func:`scanner.rules.registry.catalogue_digest`: every rule's text, status and check
  function), so a rule changed within its catalogue version is measured again too.

What none of these names (a shared helper a rule calls, a provider's render changed without its method or
``TOKENS_VERSION``) needs ``fathom rescore --all``.
"""

from __future__ import annotations

import functools
import hashlib

TOKENS_VERSION = "1"
"""Bump when what a provider's view renders or how a count is made changes without its ``method`` string changing
(a new seam correction, say): every stored measurement is then measured again on its next scan."""


@functools.cache
def measure_basis() -> str:
    """This process's basis: ``t<TOKENS_VERSION>-`` and 16 hex digits of a digest of the tokenizers' versions, the
    client table and the rule catalogue (see the module docstring). Computed once per process; nothing is loaded
    to compute it (the tokenizer is not built)."""
    from scanner import providers
    from scanner.measure import tokenizer
    from scanner.measure.clients import CLIENTS
    from scanner.rules.registry import catalogue_digest

    parts = [f"tokens {TOKENS_VERSION}", f"o200k {tokenizer.EXPECTED_SHA256}", f"pattern {tokenizer.PAT_STR}"]
    # An empty list's measurement carries every stored provider's method and needs no tokenizer.
    parts += [f"{name}: {measured.total.method}" for name, measured in sorted(providers.measure_all([]).items())]
    parts += [f"client {client!r}" for client in CLIENTS]
    parts.append(f"rules {catalogue_digest()}")
    digest = hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
    return f"t{TOKENS_VERSION}-{digest[:16]}"
