"""Text from the input (names, messages quoting them, file names) made safe for where it is shown.

A manifest can name an object with any characters: a newline that forges an output line, ANSI and
OSC escape sequences the terminal would obey, characters XML 1.0 forbids, a lone surrogate that no
encoder accepts. What reaches a terminal or a report is escaped the way Python writes a string
literal (`\\n`, `\\x1b`, `\\u202e`, `\\udc80`), so nothing is lost and nothing is obeyed.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def for_terminal(text: object) -> str:
    """One line a terminal shows as written: every character Python does not count as printable
    (controls, ESC included, format characters such as bidi overrides, line and paragraph separators,
    surrogates, unassigned code points; every space but ' ') escaped, newlines too."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else escape_char(char) for char in text)


def terminal_lines(text: object) -> list[str]:
    """A message of several lines, split at its newlines only, each line safe for a terminal."""
    return [for_terminal(line) for line in str(text).split("\n")]


def _xml_allowed(char: str) -> bool:
    """XML 1.0 Char production (tab, newline, carriage return, and the rest from U+0020 up but
    surrogates and U+FFFE/U+FFFF), less DEL and the C1 controls, which XML allows but terminals obey."""
    code = ord(char)
    if code < 0x20:
        return char in "\t\n\r"
    if 0x7F <= code <= 0x9F:
        return False
    return not (0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF))


def for_xml(text: object) -> str:
    """Text every XML 1.0 parser accepts, newlines kept; what XML forbids is escaped as above."""
    text = str(text)
    if all(_xml_allowed(char) for char in text):
        return text
    return "".join(char if _xml_allowed(char) else escape_char(char) for char in text)
