"""Markdown gate matrix: a summary table, then every cell's evidence, the answer and the notes."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from gfxgate.lazyre import lazy_compile
from gfxgate.report.text import inert

if TYPE_CHECKING:
    from gfxgate.gate.matrix import GateMatrix

from gfxgate.model import Status

LABELS = {
    Status.BLOCKED: "**blocked**",
    Status.OVERRIDE_REQUIRED: "**override-required**",
    Status.PARTIAL: "partial",
    Status.ALLOWED: "allowed",
    Status.UNKNOWN: "unknown",
    Status.NOT_SCANNED: "not scanned",
    Status.NOT_MEASURED: "not measured",
}


# Every text that comes from outside (a log, a server, a file, a repository, an argument) reaches Markdown through
# md_escape (prose and table cells), code (an inline code span) or fence (a fenced block): each leaves it inert, one
# text node of the place it is put in, under CommonMark and GitHub's extensions (tables, strikethrough, autolinks,
# task lists); benchmarks/fuzz.py checks that with cmark-gfm.
_LINE_ENDS = lazy_compile("\r\n|[\r\n\v\f\x85\u2028\u2029]")
# backslash-escaped anywhere: ASCII punctuation that opens or closes inline markup (code, emphasis, strikethrough,
# links, images, table cells); "<" where it could open raw HTML or an autolink; ">" only where it starts a line
_INLINE = "`*~[]|"  # and the backslash itself, first (str.replace: a tenth of str.translate's time on long text)
# raw HTML and URI autolinks start with "<" and a letter, "/", "!" or "?"; an e-mail autolink is "<" up to ">" with an
# "@" and no space: "<0.12" or "a < b" start nothing (a linear scan: each lookahead stops at the next "<")
_TAG_OPEN = lazy_compile(r"<(?=[A-Za-z/!?]|[^\s<>]*@[^\s<>]*>)")
# between two alphanumerics "_" is never emphasis. Each pattern that a long text is scanned with starts with a literal
# (its lookbehind after it), so the scan skips to that character instead of trying a lookbehind at every position
_UNDERSCORE = lazy_compile(r"_(?:(?<![A-Za-z0-9]_)|(?![A-Za-z0-9]))")
_ENTITY = lazy_compile(r"&(?=#[0-9]{1,7};|#[xX][0-9A-Fa-f]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
# GFM's extended autolinks: "scheme://" and "www." (a backslash escape stops them), e-mail addresses (found in the
# text after escapes are undone: a WORD JOINER after the "@", which shows nothing, stops them)
_SCHEME = lazy_compile(r":(?<=[A-Za-z0-9]:)//")
_WWW = lazy_compile(r"([wW][wW][wW])(?<![A-Za-z0-9][wW][wW][wW])\.")
# Each whole run of address characters is matched once (a pattern "[…]*@[…]*" retried every start inside a long run
# without an "@" and backtracked through it: quadratic, 3 s for a 60,000-character summary in `diff`)
_EMAIL_RUN = lazy_compile(r"[A-Za-z0-9._@-]+")


def _no_email(match: re.Match) -> str:
    """A run of address characters holding an "@": cmark-gfm links it when it has a dot and ends with a letter or a
    dot; then a WORD JOINER goes after each "@" (linear: one pass per run, whatever its length)."""
    run = match.group()
    if "@" in run and "." in run and (run[-1].isalpha() or run[-1] == "."):
        return run.replace("@", "@\u2060")
    return run


# what starts a block when the text begins a line (or a list item): headings, quotes, list markers, setext and
# thematic-break lines, ordered-list numbers
_BLOCK_START = lazy_compile(r"(?:[-+]|#{1,6}|[0-9]{1,9}(?=[.)]))(?=[.)]?(?:\s|$))|>|[-=](?=[-=\s]*$)")


def _escape_inline(text: str) -> str:
    if "@" in text:
        text = _EMAIL_RUN.sub(_no_email, text)
    text = text.replace("\\", "\\\\")
    for c in _INLINE:
        if c in text:
            text = text.replace(c, "\\" + c)
    if "<" in text:
        text = _TAG_OPEN.sub(r"\\<", text)
    if "_" in text:
        text = _UNDERSCORE.sub(r"\\_", text)
    if "&" in text:
        text = _ENTITY.sub(r"\\&", text)
    if "://" in text:
        text = _SCHEME.sub(r"\\://", text)
    if "." in text:
        text = _WWW.sub(r"\1\\.", text)
    return text


_TICKS = lazy_compile("`+")


def _code_spans(text: str, cell: bool) -> list[tuple[bool, str]]:
    """``text`` cut into (is code, part): a backtick run and the next run of the same length around a code span's
    content, as CommonMark reads them (one space stripped from both ends when both have one); outside a table cell a
    span holding a pipe stays text (a code span needs ``\\|`` in a cell and shows it elsewhere), and so does any
    run left open."""
    if "`" not in text:
        return [(False, text)]
    runs = list(_TICKS.finditer(text))
    following: list[int | None] = [None] * len(runs)  # the next run of the same length: linear, however many runs
    last: dict[int, int] = {}
    for j in range(len(runs) - 1, -1, -1):
        width = len(runs[j].group())
        following[j], last[width] = last.get(width), j
    out: list[tuple[bool, str]] = []
    start = i = 0
    while i < len(runs):
        opening, close = runs[i], following[i]
        if close is None:
            i += 1
            continue
        content = text[opening.end() : runs[close].start()]
        if len(content) > 1 and content[0] == content[-1] == " " and content.strip(" "):
            content = content[1:-1]
        if content and (cell or "|" not in content):
            out += [(False, text[start : opening.start()]), (True, content)]
            start = runs[close].end()
        i = close + 1
    return out + [(False, text[start:])]


def md_escape(text: str, *, cell: bool = False) -> str:
    """``text`` inert in Markdown prose, a heading or a table cell: one line (line ends become spaces), controls made
    visible (:func:`~gfxgate.report.text.inert`), markup characters backslash-escaped, no block start, no autolink
    and no trailing hard break: what it shows is the text itself. A code span the text holds (gfxgate's summaries
    quote upstream values so) is kept as a code span, rebuilt by :func:`code`: inert whatever it holds; ``cell``: the
    text is a table cell's (a kept span's pipes escaped as GFM wants). The one escaper."""
    if len(text) <= _MEMO_CHARS:  # a report escapes the same names and summaries again and again
        return _md_escape_memo(text, cell)
    return _md_escape(text, cell)


# md_escape and code remember the last few thousand short texts they made inert (pure functions; the bounds in
# entries and in each entry's length keep each memo under ~40 MB whatever the input)
_MEMO_CHARS = 256


def _md_escape(text: str, cell: bool) -> str:
    """:func:`md_escape` itself."""
    if not text:
        return ""
    text = inert(_LINE_ENDS.sub(" ", text)).strip()
    if not text:
        return "&#32;"  # blank: still one text node (an empty "**…**" would be a thematic break)
    parts = _code_spans(text, cell)
    text = "".join(
        code(part, cell=cell)
        if is_code
        else _open_before_code(_escape_inline(part))
        if i + 1 < len(parts) and parts[i + 1][0]
        else _escape_inline(part)
        for i, (is_code, part) in enumerate(parts)
    )
    if text.endswith("#"):
        text = text[:-1] + "\\#"  # an ATX heading's closing sequence would swallow it
    match = _BLOCK_START.match(text)
    if match:
        end = match.end() if match.group()[0].isdigit() else 0
        text = text[:end] + "\\" + text[end:]
    return text


# a "<" whose run (no space, "<" or ">" after it) reaches a kept code span: with the span's backtick it can open an
# e-mail autolink ("<`a@b.c>": a backtick is an address character), which CommonMark reads before the code span
_SPACE_OR_ANGLE = lazy_compile(r"[\s<>]")


def _open_before_code(escaped: str) -> str:
    """``escaped`` (a text part followed by a kept code span) with its last "<" escaped when nothing after it ends the
    run: only that one can reach the span (every earlier "<" has this one after it)."""
    at = escaped.rfind("<")
    if at < 0 or _SPACE_OR_ANGLE.search(escaped, at + 1):
        return escaped
    slashes = at - len(escaped[:at].rstrip("\\"))
    return escaped if slashes % 2 else escaped[:at] + "\\" + escaped[at:]


_md_escape_memo = functools.lru_cache(maxsize=4096)(_md_escape)
_LONG_TICKS = lazy_compile("`{65,}")


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max(map(len, runs), default=0)


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as one inline code span: a backtick fence longer than any backtick run in it, padded with a space
    where CommonMark would otherwise strip one or join the fence (a backtick or a space at both ends), line ends as
    spaces, controls made visible; ``cell``: inside a table row (its pipes escaped, as GFM requires even in code)."""
    if text and len(text) <= _MEMO_CHARS:
        return _code_memo(text, cell)
    return _code(text, cell)


def fenced(lines: tuple[str, ...] | list[str], *, indent: str = "") -> str:
    """``lines`` as a fenced code block (shell), each line made inert, the fence longer than any backtick run in
    them; ``indent``: inside a list item."""
    body = [inert(_LINE_ENDS.sub(" ", line)) for line in lines]  # one line each: a line end in one is a space
    fence = "`" * max(3, max((_longest_run(line, "`") for line in body), default=0) + 1)
    return "\n".join(indent + line for line in [fence + "sh", *body, fence]) + "\n"


def _code(text: str, cell: bool) -> str:
    """:func:`code` itself."""
    text = inert(_LINE_ENDS.sub(" ", text or ""))
    if not text:
        return ""
    if "`" * 65 in text:  # cmark ignores fences of 1000 backticks or more: a long run is shown by its length
        text = _LONG_TICKS.sub(lambda m: f"`×{len(m.group())}", text)
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " " and text.strip(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_code_memo = functools.lru_cache(maxsize=4096)(_code)


_URL_UNSAFE = lazy_compile(r"[\x00-\x20\x7f-\x9f<>()\\`|\[\]\"']")


def link(text: str, url: str) -> str:
    """A link the formatter writes (``text`` already Markdown, e.g. a :func:`code` span) to ``url``: the URL
    percent-encoded where it could end the link or the table cell; only http(s) URLs are linked, anything else is
    shown as text."""
    if not re.match(r"https?://[^\s]", url or ""):
        return text
    safe = _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), url)
    return f"[{text}]({safe})"


_FENCE_LINE = lazy_compile(r" {0,3}(`{3,})[ \t]*")  # a line that could close a backtick fence


def fence(lines, info: str = "text") -> list[str]:
    """``lines`` as one fenced code block (a list of lines): a backtick fence longer than any line of backticks
    inside (so no line can close it; cmark-gfm keeps a fence's length in a byte, so a line of 250 or more is shown by
    its length), each line one line (a bare CR or another line end inside it made visible)."""
    body, width = [], 3
    for line in map(inert, lines):
        match = _FENCE_LINE.fullmatch(line)
        if match:
            run = len(match.group(1))
            if run >= 250:
                line = line.replace(match.group(1), f"`×{run}")
            else:
                width = max(width, run + 1)
        body.append(line)
    return ["`" * width + info, *body, "`" * width]


def checked_table(title: str, sources, header: tuple[str, ...]) -> list[str]:
    """The head of a checked-against-the-sources report (workarounds, messages): its title, the refs it was
    checked at, and the header of its table."""
    lines = [f"# {title}", ""]
    if sources:
        lines += ["Checked at " + ", ".join(code(f"{s.name}@{s.ref}") for s in sources) + ".", ""]
    return lines + ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def answer_cell(route) -> str:
    """The route in a few words for the summary table; "?" marks an answer a shorter undecided route could change."""
    if route is None:
        return ""
    text = f"**{md_escape(route.label)}**" if route.best else "undecided"
    if route.best and not route.certain:
        text += " (?)"
    others = [b.option.label for b in route.backends if b.option and b.option is not route.best and b.backend != "cpu"]
    if others and route.best is not None:
        text += "; or " + "; or ".join(map(md_escape, others))
    if route.runtime:
        text += f", run {md_escape(route.runtime.outcome)}"
    return text


_STATUSES = """Statuses: *allowed* — this layer lets the target through; *blocked* — it stops the target; *override-required* —
only with an explicit override (build flag, environment variable); *partial* — only in some configurations;
*unknown* — the evidence could not decide (the reason is given); *not scanned* / *not measured* — no input for
this layer was given.
"""

_ANSWER = """## The answer

Can the target run at this version, on which backend, and by which shortest route? Routes come from `rules/routes.yaml`
over the layers above; every step is a workaround from `rules/workarounds.yaml` with the evidence of the cells it covers.
"""

_NO_REASON = (Status.UNKNOWN, Status.NOT_SCANNED, Status.NOT_MEASURED)


def render(matrix: GateMatrix) -> str:
    """The summary table (one row per layer, then the answer), every cell's evidence, the routes, the notes."""
    m, out = matrix, []  # type: GateMatrix, list[str]
    w = out.append
    w(f"# gfxgate gate matrix: {md_escape(', '.join(map(str, m.targets)))}\n\n")
    if m.sources:
        w(
            "Sources: "
            + ", ".join(
                code(f"{s.name}@{s.ref}") + (f" ({md_escape(s.commit[:12])})" if s.commit else "") for s in m.sources
            )
            + ".\n"
        )
    w("\n| Layer | " + "".join(f"{md_escape(t)} | " for t in m.targets) + "\n")
    w("|---|" + "---|" * len(m.targets) + "\n")
    for layer in m.layers:
        w(
            f"| {md_escape(layer.title)} | "
            + "".join(f"{LABELS[v.status]}: {md_escape(v.summary, cell=True)} | " for v in m.row(layer.id))
            + "\n"
        )
    if m.routes:
        w("| **The answer** | " + "".join(f"{answer_cell(m.route(t))} | " for t in m.targets) + "\n")
    w("\n" + _STATUSES + "\n")
    for layer in m.layers:
        w(f"## {md_escape(layer.title)}\n\n{md_escape(layer.question)}\n\n")
        for v in m.row(layer.id):
            w(f"### {md_escape(v.target)}: {LABELS[v.status]}\n\n{md_escape(v.summary)}\n\n")
            for e in v.evidence:
                w(
                    "- "
                    + (code(str(e.location)) if e.location else "(no location)")
                    + (f" — {code(e.text)}" if e.text else "")
                    + (f" ({md_escape(e.note)})" if e.note else "")
                    + f" [{md_escape(e.source)}]\n"
                )
            if v.remedy:
                w(f"\nRemedy: {md_escape(v.remedy)}\n")
            if v.reason:
                w(f"\n{'Why: ' if v.status in _NO_REASON else 'Also checked: '}{md_escape(v.reason)}\n")
            if v.workarounds:
                w(f"\nWorkarounds: {md_escape(', '.join(map(str, v.workarounds)))}\n")
            w("\n")
    if m.routes:
        w(_ANSWER + "\n")
        for r in m.routes:
            w(
                f"### {md_escape(r.target)}: {md_escape(r.label)}"
                + (" (uncertain)" if not r.certain and r.best else "")
                + "\n\n"
            )
            w(f"{md_escape(r.full_sentence)}\n\n")
            for b in r.backends:
                if b.option:
                    o = b.option
                    w(
                        f"- **{md_escape(o.label)}**"
                        + (f" (runs as {md_escape(o.override_target)})" if o.override_target else "")
                        + "\n"
                    )
                    for s in o.steps:
                        w(
                            f"  - step {code(s.setting)} ({md_escape(s.workaround)}), covers {md_escape(', '.join(map(str, s.covers)))}: "
                            + ", ".join(code(str(e.location)) if e.location else "" for e in s.evidence)
                            + (
                                f"; {'' if s.check.state == 'not checked' else 'checked: '}{md_escape(s.check.state)} — "
                                f"{md_escape(s.check.summary)}"
                                if s.check
                                else ""
                            )
                            + "\n"
                        )
                        if s.recipe:  # a build step: its commands at this version (answer/steps.py: build_recipe)
                            w("\n    the whole build, in order:\n\n" + fenced(s.recipe, indent="    ") + "\n")
                    if b.machine is not None:  # the Route's word from this machine's runs (scan --log)
                        w(
                            f"  - on this machine: {md_escape(b.machine.state)} — {md_escape(b.machine.reason)}"
                            + (f" ({', '.join(code(e) for e in b.machine.evidence)})" if b.machine.evidence else "")
                            + "\n"
                        )
                    for condition in o.conditions:
                        w(f"  - if: {md_escape(condition)}\n")
                    for done in o.satisfied:
                        w(
                            f"  - already done: {md_escape(done.workaround)} — the installed tree's {md_escape(done.layer)} row is allowed: "
                            + ", ".join(
                                code(str(e.location)) if e.location else md_escape(e.source) for e in done.evidence[:3]
                            )
                            + "\n"
                        )
                    w(
                        "  - evidence: "
                        + ", ".join(code(str(e.location)) if e.location else md_escape(e.source) for e in o.evidence)
                        + "\n"
                    )
                elif b.state == "undecided":
                    w(f"- **{md_escape(b.title)}**: undecided — {md_escape('; '.join(map(str, b.undecided)))}\n")
                else:
                    w(f"- **{md_escape(b.title)}**: no route — {md_escape('; '.join(map(str, b.refused)))}\n")
            for beyond in r.beyond:  # routes beyond the official release (docs/forks.md), after the official ones
                where = f"{beyond.source}@{beyond.version}"
                if beyond.option is None:
                    w(
                        f"- **or {md_escape(beyond.route)}** ({md_escape(where)}): {md_escape(beyond.state)} — "
                        f"{md_escape('; '.join(beyond.reasons))}\n"
                    )
                    continue
                o = beyond.option
                w(f"- **or {md_escape(o.label)}** (beyond the official release: {md_escape(where)})\n")
                for condition in o.conditions:
                    w(f"  - if: {md_escape(condition)}\n")
                for s in o.steps:
                    w(
                        f"  - step {code(s.setting)} ({md_escape(s.workaround)}), covers {md_escape(', '.join(map(str, s.covers)))}: "
                        + ", ".join(code(str(e.location)) if e.location else "" for e in s.evidence)
                        + (
                            f"; {'' if s.check.state == 'not checked' else 'checked: '}{md_escape(s.check.state)} — "
                            f"{md_escape(s.check.summary)}"
                            if s.check
                            else ""
                        )
                        + "\n"
                    )
                w(
                    "  - evidence: "
                    + ", ".join(code(str(e.location)) if e.location else md_escape(e.source) for e in o.evidence)
                    + "\n"
                )
            if r.runtime:
                w(
                    f"- **Runtime**: {md_escape(r.runtime.outcome)} — {md_escape(r.runtime.summary)}"
                    + "".join(f" [{md_escape(e.source)}]" for e in r.runtime.evidence)
                    + "\n"
                )
            w("\n")
    if m.notes:
        w("## Notes\n\n" + "".join(f"- {md_escape(n)}\n" for n in m.notes))
    return "".join(out)
