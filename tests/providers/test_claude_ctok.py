"""With ``ctok`` installed (the ``claude`` extra, Python 3.12+), both Claude generations are counted with it and
the method says so. Skipped where ctok is not importable (this project's CI runs Python 3.11, where the
calibrated factors are used; tests/providers/test_provider_tokens.py covers those)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ctok = pytest.importorskip("ctok")

from scanner.providers import list_tokens, measure  # noqa: E402
from scanner.providers.anthropic import CURRENT, EARLIER, SYSTEM_PROMPT_TOKENS, Anthropic  # noqa: E402

REALISTIC: list[Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "realistic-tools.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("generation", [CURRENT, EARLIER], ids=lambda g: g.key)
def test_ctok_counts_the_functions_block(generation: Any) -> None:
    block = Anthropic().block(REALISTIC[:6])
    frame = ctok.token_count("", generation.ctok_version)
    expected = ctok.token_count(block, generation.ctok_version) - frame + SYSTEM_PROMPT_TOKENS
    count = list_tokens(generation.key, REALISTIC[:6])
    assert count.tokens == expected
    assert count.method.startswith(f"ctok {generation.ctok_version} (<functions> block, {generation.models}")
    per_tool = measure(generation.key, REALISTIC[:6]).per_tool
    line = Anthropic.function_line(Anthropic().view(REALISTIC[:1])[0])
    assert per_tool[0] == ctok.token_count(line, generation.ctok_version) - frame
