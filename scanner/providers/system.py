"""What a server's ``instructions`` cost per turn with each provider, counted the way each receives a system text.

Many clients put the server's ``instructions`` (from ``initialize``, or the 2026 discovery result) into the system
prompt on every turn, beside the tool list. Each provider receives that text differently:

- Anthropic: as (part of) the ``system`` parameter, plain text read by Claude's tokenizer. Counted with ``ctok``
  when installed, else the o200k_base count times the generation's factor (calibrated on ``<functions>`` blocks,
  not on prose: the method says so).
- OpenAI: as (part of) the system/developer message, rendered by harmony as the text itself between fixed
  message tokens. Counted exactly with o200k_base.
- Gemini: as (part of) ``systemInstruction.parts[].text``. o200k_base times Gemini's factor (calibrated on
  declaration JSON; Google's tokenizer is not available offline).

Every count is the text's marginal cost: a client appends the instructions to a system prompt it already sends,
so no per-message framing is added (docs/tokens.md). Empty text costs 0.
"""

from __future__ import annotations

from scanner.measure import tokenizer
from scanner.models import MEASURED_PROVIDERS, TokenCount
from scanner.providers.anthropic import CURRENT, EARLIER, Anthropic, Generation, ctok_available
from scanner.providers.base import scaled
from scanner.providers.gemini import FACTOR as GEMINI_FACTOR

OPENAI_METHOD = "o200k_base(instructions text in the system/developer message)"
GEMINI_METHOD = (
    f"o200k_base(instructions text in systemInstruction)x{GEMINI_FACTOR:.2f} (factor calibrated on declaration JSON)"
)


def anthropic_method(generation: Generation) -> str:
    """How the instructions are counted for one Claude tokenizer generation."""
    if ctok_available():
        return f"ctok {generation.ctok_version}(instructions text in system) ({generation.models} tokenizer)"
    return (
        f"o200k_base(instructions text in system)x{generation.factor:.2f} ({generation.models} tokenizer, "
        "factor calibrated on <functions> blocks)"
    )


def instructions_tokens(text: str) -> dict[str, TokenCount]:
    """Every stored provider key's cost per turn of ``text`` as a system text, each with its method."""
    base = tokenizer.count(text) if text else 0
    out: dict[str, TokenCount] = {}
    for generation in (CURRENT, EARLIER):
        tokens = Anthropic(generation).text_tokens(text) if text else 0
        out[generation.key] = TokenCount(generation.key, tokens, anthropic_method(generation))
    out["openai"] = TokenCount("openai", base, OPENAI_METHOD)
    out["gemini"] = TokenCount("gemini", scaled(base, GEMINI_FACTOR), GEMINI_METHOD)
    return {name: out[name] for name in MEASURED_PROVIDERS}
