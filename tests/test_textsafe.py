"""Server text printed in a terminal: control and format characters are shown, never obeyed."""

from __future__ import annotations

from scanner.textsafe import clean


def test_escape_sequences_and_bidi_are_made_visible() -> None:
    hostile = "ok\x1b[2J\x1b]0;pwned\x07 \u202eevil\u202c \u200bhidden \U000e0041tag\x85"
    cleaned = clean(hostile)
    for raw in ("\x1b", "\x07", "\u202e", "\u202c", "\u200b", "\U000e0041", "\x85"):
        assert raw not in cleaned
    assert "\\u001b[2J" in cleaned
    assert "\\u202e" in cleaned
    assert "\\U000e0041" in cleaned


def test_ordinary_text_is_untouched() -> None:
    assert clean("Busca productos — tienda «Alpenglow» 🏔") == "Busca productos — tienda «Alpenglow» 🏔"


def test_newlines_kept_only_when_asked() -> None:
    assert clean("a\nb") == "a\\u000ab"
    assert clean("a\nb\x1b", keep_newlines=True) == "a\nb\\u001b"


def test_non_strings_are_shown_not_crashed_on() -> None:
    assert clean(["x", 1]) == "['x', 1]"
