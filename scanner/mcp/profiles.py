"""Named client-capability profiles: what the scanner declares it can do.

What a client declares changes what some servers list (``server-everything`` lists more tools to a client that
declares roots, sampling and elicitation), so counts are only comparable under the same declaration. Every scan
uses one named profile and reports its name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from scanner import __version__ as _scanner_version

CLIENT_INFO: Mapping[str, str] = MappingProxyType({"name": "fathom", "version": _scanner_version})

PROFILES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        # What a full-featured chat client declares: the list a typical user's model sees. ``elicitation: {}``
        # means form mode only (2025-11-25); server-everything lists 16 tools to it.
        "rich": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}},
        # rich plus URL-mode elicitation (2025-11-25): server-everything adds trigger-url-elicitation (17).
        "full": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}, "url": {}}},
        # Nothing at all: the list any client gets (server-everything: 13).
        "bare": {},
    }
)
DEFAULT_PROFILE = "rich"
_ENCODED = {name: json.dumps(value) for name, value in PROFILES.items()}


def capabilities(profile: str) -> dict[str, Any]:
    """A fresh copy of ``profile``'s client capabilities (decoded anew: every scan's messages its own, a tenth of
    a deep copy's cost); an unknown name is a caller's bug (KeyError)."""
    copied: dict[str, Any] = json.loads(_ENCODED[profile])
    return copied
