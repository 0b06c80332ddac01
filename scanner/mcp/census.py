"""The census classes a bare HTTP answer falls into: payment required (402, x402), rate limited (429), not MCP.

Registry censuses (the nightly probes posted as modelcontextprotocol/registry issues) count a 402 and a web page
apart from a broken server; so does Fathom. This module only reads what the server sent and says what it was:

- :func:`x402_summary`: the short, secret-free summary of an x402 payment offer, from a 402 body (x402 v1:
  ``{"x402Version": 1, "accepts": [...]}``) or the v2 ``PAYMENT-REQUIRED`` header (base64 JSON).
- :func:`status_outcome`: the outcome an unusable HTTP status ends in (402, 429 or a plain ``http_error``).
- :func:`snippet`: the first characters of a body that is not MCP, hidden characters escaped, for a person.

``docs/outcomes.md`` maps every outcome onto the censuses' classes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from scanner import textsafe, wire
from scanner.models import Outcome

SNIPPET_CHARS = 200
_FIELD_CHARS = 80
_OFFERS_SHOWN = 3


def status_outcome(status: int) -> Outcome:
    """402 is ``payment_required``, 429 ``rate_limited`` (the crawl retries it first), anything else
    ``http_error``."""
    if status == 402:
        return Outcome.PAYMENT_REQUIRED
    if status == 429:
        return Outcome.RATE_LIMITED
    return Outcome.HTTP_ERROR


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a body that is not MCP, white space folded and hidden characters shown as escapes."""
    return textsafe.clean_text(" ".join(wire.clean_str(text).split()), limit=limit)


def _field(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | str):
        return textsafe.clean_text(str(value), limit=_FIELD_CHARS)
    return None


def _offer(raw: Any) -> dict[str, str] | None:
    if not isinstance(raw, Mapping):
        return None
    extra = raw.get("extra")
    asset_name = extra.get("name") if isinstance(extra, Mapping) else None
    fields = {
        "scheme": _field(raw.get("scheme")),
        "network": _field(raw.get("network")),
        # v1 says maxAmountRequired, v2 amount; both are strings of the asset's smallest unit.
        "amount": _field(raw.get("maxAmountRequired", raw.get("amount"))),
        "asset": _field(asset_name) or _field(raw.get("asset")),
        "description": _field(raw.get("description")),
    }
    offer = {key: value for key, value in fields.items() if value}
    return offer or None


def _decode_header(value: str) -> Any:
    try:
        return wire.loads(base64.b64decode(value.strip() + "=" * (-len(value.strip()) % 4), validate=False))
    except (binascii.Error, ValueError, RecursionError):
        return None


def x402_summary(body: bytes, header: str | None = None) -> dict[str, Any] | None:
    """A summary of the x402 offer in a 402 answer, or None if it carries none.

    ``{"version": 1, "offers": 2, "accepts": [{"scheme", "network", "amount", "asset", "description"}, ...]}``
    with at most three offers shown, every value a capped, escaped string. Read from the JSON body, else from the
    base64 ``PAYMENT-REQUIRED`` header (x402 v2). Nothing here can raise on hostile input.
    """
    document: Any = None
    if body.lstrip()[:1] == b"{":
        try:
            document = wire.loads(body)
        except (ValueError, RecursionError):
            document = None
    if not (isinstance(document, Mapping) and "accepts" in document) and header:
        document = _decode_header(header)
    if not isinstance(document, Mapping):
        return None
    accepts = document.get("accepts")
    version = document.get("x402Version")
    if not isinstance(accepts, list) and not isinstance(version, int):
        return None
    offers = [offer for raw in (accepts if isinstance(accepts, list) else [])[:50] if (offer := _offer(raw))]
    summary: dict[str, Any] = {"offers": len(accepts) if isinstance(accepts, list) else 0}
    if isinstance(version, int) and not isinstance(version, bool):
        summary["version"] = version
    if offers:
        summary["accepts"] = offers[:_OFFERS_SHOWN]
    return summary


def x402_text(summary: Mapping[str, Any]) -> str:
    """One line for the detail: ``x402: exact 10000 USDC on base (+1 more offer)``."""
    accepts = summary.get("accepts") or []
    if not accepts:
        return "x402 offer without terms"
    first = accepts[0]
    words = [first.get("scheme", ""), first.get("amount", ""), first.get("asset", "")]
    text = " ".join(word for word in words if word)
    if first.get("network"):
        text += f" on {first['network']}"
    more = int(summary.get("offers", 1)) - 1
    if more > 0:
        text += f" (+{more} more offer{'s' if more > 1 else ''})"
    return f"x402: {text or 'offer'}"
