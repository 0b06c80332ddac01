"""The one naming rule for values Fathom takes from the environment for a registry server.

A server.json can ask for inputs it cannot carry: secret headers (API keys), required environment variables of a
package, URL variables without a default. Fathom reads them from the environment under one name per server:

    FATHOM_SECRET_<SERVER>_<INPUT>

where SERVER is the server's registry name and INPUT the header, environment variable or variable name, both
upper-cased with every run of characters other than A-Z and 0-9 replaced by a single ``_`` (and ``_`` trimmed
from both ends). For example the ``Authorization`` header of ``ai.smithery/smithery-toolbox`` is read from
``FATHOM_SECRET_AI_SMITHERY_SMITHERY_TOOLBOX_AUTHORIZATION`` and holds the whole header value
(``Bearer sk-...``).

URL variables are the exception: a URL is stored and printed, so it must never hold a secret, and a URL variable
is read from ``FATHOM_VAR_<SERVER>_<VARIABLE>`` instead (:func:`var_env_name`); a value set for one under
``FATHOM_SECRET_`` is not put in a URL (the remote is passed over, with the reason).

The server's name is part of the variable on purpose: a token set for one server is never sent to another that
happens to ask for a header of the same name. Two names that differ only in punctuation (``a.b/c`` and
``a-b/c``) share a variable; that is the price of a name a shell can spell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PREFIX = "FATHOM_SECRET_"
# URL variables are not secrets: a URL is stored, printed by --dry-run and queued. Their values come from
# FATHOM_VAR_<SERVER>_<VARIABLE>, a namespace the scrubber does not treat as secret.
VAR_PREFIX = "FATHOM_VAR_"
_NOT_ALNUM = re.compile(r"[^A-Z0-9]+")


def _part(text: str) -> str:
    return _NOT_ALNUM.sub("_", text.upper()).strip("_")


def secret_env_name(server: str, input_name: str) -> str:
    """The environment variable that supplies ``input_name`` (a header, env var or variable) for ``server``."""
    return f"{PREFIX}{_part(server)}_{_part(input_name)}"


def var_env_name(server: str, variable: str) -> str:
    """The environment variable that supplies URL variable ``variable`` of ``server`` (not a secret)."""
    return f"{VAR_PREFIX}{_part(server)}_{_part(variable)}"


def lookup(environ: Mapping[str, str], server: str, input_name: str) -> str | None:
    """The value set for this server's input, or None when unset or empty."""
    value = environ.get(secret_env_name(server, input_name))
    return value or None
