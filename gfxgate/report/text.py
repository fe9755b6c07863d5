"""The one sanitizer every text written to a terminal goes through: :func:`inert` (a field), :func:`inert_lines` (a
formatter's lines), :func:`inert_text` (a whole report). The gate matrix's own text is report/terminal.py."""

from __future__ import annotations

import re
from typing import Iterable


# C0 controls but TAB, DEL, and C1 (U+0080-U+009F): a terminal acts on them (ESC starts CSI/OSC sequences that set
# the window title or hide a hyperlink, CR overwrites the line, U+009B is a one-character CSI), so none may reach it.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _visible(match: re.Match) -> str:
    c = ord(match.group())
    if c < 0x20:
        return chr(0x2400 + c)  # the Control Pictures block: ESC -> U+241B, CR -> U+240D, LF -> U+240A
    return "\u2421" if c == 0x7F else f"<U+{c:04X}>"


def inert(text: str) -> str:
    """``text`` with every C0 control but TAB (line ends included: a field is one line), DEL and every C1 control
    replaced by a visible form (a Control Picture, ``<U+009B>``), so that no byte of it acts on a terminal."""
    return _CONTROLS.sub(_visible, text) if _CONTROLS.search(text) else text


def inert_lines(lines: Iterable[str]) -> str:
    """The formatter's own lines, each made :func:`inert`, joined by the newlines only the formatter writes."""
    return "".join(inert(line) + "\n" for line in lines)


def inert_text(text: str) -> str:
    """A whole text (a report of several lines): every line made :func:`inert`, the line feeds kept."""
    return "\n".join(map(inert, text.split("\n")))
