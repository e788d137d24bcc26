"""cmdline/safe_text.py: what is escaped for a terminal and for XML, and that nothing is lost."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cmdline.safe_text import for_terminal, for_xml, terminal_lines


def test_the_terminal_sees_every_unprintable_character_escaped() -> None:
    """C0 and C1 controls, DEL, bidi overrides, line separators and lone surrogates are written as
    Python writes them in a literal; printable text, other scripts included, is left alone."""
    assert for_terminal("web-0 \u00e9\u4e2d") == "web-0 \u00e9\u4e2d"
    assert for_terminal("a\nb\tc\x1b[0m\x07\x7f\x85") == "a\\nb\\tc\\x1b[0m\\x07\\x7f\\x85"
    assert for_terminal("\u202eevil\u2028\udc80\U000e0001") == "\\u202eevil\\u2028\\udc80\\U000e0001"
    assert for_terminal("x").encode("utf-8") == b"x"
    assert for_terminal("\udc80").encode("utf-8") == b"\\udc80"  # encodable, whatever the name held


def test_a_message_keeps_its_own_lines_and_nothing_else_splits_one() -> None:
    """Split at newlines only: a vertical tab or U+2028 in a line is shown, not obeyed."""
    assert terminal_lines("first\nsecond\x0bstill\u2028second") == ["first", "second\\x0bstill\\u2028second"]


def test_xml_gets_what_xml_1_0_allows_and_c1_controls_escaped() -> None:
    """Tab, newline and carriage return stay; other C0 controls, DEL and C1 controls, surrogates and
    U+FFFE/U+FFFF are escaped, so the text always parses back as written."""
    text = "a\tb\nc\rd\x00\x1b\x7f\x9b\udc80\ufffe\uffff\U0001f600"
    escaped = for_xml(text)
    assert escaped == "a\tb\nc\rd\\x00\\x1b\\x7f\\x9b\\udc80\\ufffe\\uffff\U0001f600"
    element = ET.fromstring(ET.tostring(ET.Element("t", v=escaped), encoding="unicode"))
    assert element.get("v") == escaped
