"""Cases files: YAML (a list or {cases: [...]}) and JSONL; every mistake is a one-line input error."""

from __future__ import annotations

import pytest

from scanner.errors import InputError
from scanner.trial.cases import Case, load_cases


def test_yaml_list_and_mapping() -> None:
    text = b"- {prompt: Find tents, tool: search_catalog, arguments: {query: tent}}\n- {prompt: Hi, tool: null}\n"
    cases = load_cases("c.yaml", text)
    assert cases == [
        Case("case 1", "Find tents", True, "search_catalog", {"query": "tent"}, None),
        Case("case 2", "Hi", True, None, None, None),
    ]
    assert load_cases("c.yml", b"cases:\n" + text.replace(b"- ", b"  - ")) == cases


def test_jsonl() -> None:
    text = b'{"name": "a", "prompt": "Find tents", "tool": "search"}\n\n{"prompt": "x", "tool": null}\n'
    assert [case.name for case in load_cases("c.jsonl", text)] == ["a", "case 2"]


@pytest.mark.parametrize(
    ("path", "text", "words"),
    [
        ("c.yaml", b"- {prompt: x, tool: t, args: {a: 1}}", "case 1: unknown key 'args'"),
        ("c.yaml", b"- {tool: t}", "case 1: 'prompt' must be non-empty text"),
        ("c.yaml", b"- {prompt: x}", "case 1: 'tool' is missing"),
        ("c.yaml", b"- {prompt: x, tool: t, arguments: [1]}", "'arguments' must be a mapping"),
        ("c.yaml", b"- {prompt: x, tool: t, arguments_schema: {type: strnig}}", "'arguments_schema': the tool's"),
        ("c.yaml", b"- {prompt: x, tool: null, arguments: {a: 1}}", "need a 'tool'"),
        ("c.yaml", b"prompt: x", "want a list of cases"),
        ("c.yaml", b"- [unclosed", "not valid YAML at line"),
        ("c.yaml", b"[]", "no cases"),
        ("c.jsonl", b'{"prompt": "x", "tool": "t"}\n{oops\n', "line 2 is not JSON"),
    ],
)
def test_mistakes_are_input_errors(path: str, text: bytes, words: str) -> None:
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace("[", r"\[")) as caught:
        load_cases(path, text)
    assert "\n" not in str(caught.value)
