"""Text from logs, servers and files made inert for a terminal: control characters become visible escapes.

C0 controls (but TAB), DEL, the C1 range U+0080–U+009F (U+009B is a one-byte CSI on some terminals) and ESC can
move the cursor, retitle the window (OSC 0), hide a hyperlink (OSC 8) or overwrite a line (CR); each one is
written as ``\\xNN`` instead, so what a person reads is what the text held. Line feeds are kept only where the
caller says a value may span lines.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_LF = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _escape(match: re.Match) -> str:
    return f"\\x{ord(match.group()):02x}"


def inert(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character but TAB (and LF when ``lines``) shown as ``\\xNN``."""
    pattern = _CONTROLS if lines else _CONTROLS_AND_LF
    return pattern.sub(_escape, text) if pattern.search(text) else text
