"""The message part of a log line: what journalctl, ``docker logs -t``, terminal colours and llama.cpp's logger put
in front of it removed (pure functions, no I/O).

``diagnose`` removes the prefixes only from the lines a catalogue literal points at (and the crash windows it keeps),
never from every line it reads.
"""

from __future__ import annotations

from gfxgate.lazyre import lazy_compile

# journalctl's prefixes: "-o short" (Dec 02 17:00:00 host ollama[123]: ), "-o short-iso", "-o short-precise".
_JOURNAL_RE = lazy_compile(
    r"^(?:[A-Z][a-z]{2} [ 0-3]?\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" \S+ [^\s:\[]+(?:\[\d+\])?: "
)
# `docker logs -t` / `kubectl logs --timestamps`: "2025-10-05T08:00:00.123456789Z "
_DOCKER_RE = lazy_compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d) ")
_ANSI_RE = lazy_compile(r"\x1b\[[0-9;]*[A-Za-z]")
# llama.cpp's common_log with --log-prefix/--log-timestamps: "0.00.035.060 I "
_LLAMA_PREFIX_RE = lazy_compile(r"^\d+\.\d\d\.\d\d\d\.\d\d\d [IWED] ")


def strip_prefix(text: str) -> tuple[str, bool]:
    """The message part of a line: journal prefix, ANSI colours and llama.cpp's timestamp prefix removed."""
    journal = False
    head = text[:1]
    match = _JOURNAL_RE.match(text) if head.isdigit() or head.isupper() else None
    if match:
        text, journal = text[match.end() :], True
    elif head.isdigit() or head.isalpha():
        match = _DOCKER_RE.match(text)
        if match:
            text = text[match.end() :]
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    match = _LLAMA_PREFIX_RE.match(text) if text[:1].isdigit() else None
    if match:
        text = text[match.end() :]
    return text.rstrip("\r\n"), journal


def is_separator(raw: str) -> bool:
    """journalctl's "-- Boot … --" / "-- No entries --" separators."""
    return raw.startswith("-- ") and raw.rstrip().endswith("--")
