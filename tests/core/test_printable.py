"""Terminal-safe text: every control character escaped, everything else left as written."""

from __future__ import annotations

from precedent.core.printable import _UNICODE_CONTROLS, _escape, printable, printable_tree


def _unsafe(char: str) -> bool:
    """The control characters, as the module's docstring lists them."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or char in _UNICODE_CONTROLS


def test_exactly_the_control_characters_are_escaped() -> None:
    # Every code point of the first planes' start and the Unicode controls: the one search
    # escapes a character exactly when the listed definition calls it unsafe.
    for code in [*range(0x3000), 0xFEFF, 0x1F600]:
        char = chr(code)
        expected = _escape(char) if _unsafe(char) else char
        assert printable(char) == expected, hex(code)
        assert printable(f"a{char}b") == f"a{expected}b", hex(code)


def test_a_line_that_looks_like_the_operators_own_stays_on_its_line() -> None:
    text = "checkout\nApproved: True (approved by alice)\x1b[2J\u202eevil\u2066"
    assert printable(text) == (
        "checkout\\nApproved: True (approved by alice)\\x1b[2J\\u202eevil\\u2066"
    )
    assert printable("plain text, ünïcode and 日本語") == "plain text, ünïcode and 日本語"
    assert printable_tree({"a\tb": ["c\rd", 1]}) == {"a\\tb": ["c\\rd", 1]}
