"""The gate matrix as a person reads it in a terminal: the answer first, the layers as a compact table, the
evidence behind ``-v``.

Rendered with rich into a string (no I/O: the CLI writes it), wrapped to ``width``; colour only when asked
(``color=True``: the CLI asks on a TTY without ``NO_COLOR``). Every string that came from a source, a log or a
server goes in as a :class:`rich.text.Text` (never as markup) after :func:`inert`, so it cannot style the output or
reach the terminal as a control sequence.
"""

from __future__ import annotations

import io
import textwrap

from rich.console import Console
from rich.text import Text
from rich.padding import Padding
from rich.table import Table
from rich import box
from rich.markdown import Markdown

from gfxgate.gate.matrix import GateMatrix
from gfxgate.report.text import inert, inert_text

# status -> style; plain words stay readable without colour
STYLES = {
    "allowed": "green",
    "override-required": "yellow",
    "partial": "yellow",
    "blocked": "bold red",
    "unknown": "magenta",
}
_DIM = "dim"


def _console(width: int, color: bool):
    return Console(
        file=io.StringIO(),
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
    )


def _text(*parts: tuple[str, str] | str):
    """A rich Text from (string, style) pairs or plain strings, every string made inert."""
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(inert(part[0]), style=part[1] or None)
        else:
            out.append(inert(part))
    return out


def _where(evidence) -> str:
    first = next((e for e in evidence if e.location), evidence[0] if evidence else None)
    if first is None:
        return ""
    return str(first.location) if first.location else first.source


def _answer(console, matrix: GateMatrix, verbose: bool) -> None:
    for number, route in enumerate(matrix.routes):
        if number:
            console.print()
        head = route.target + (f" at {route.version}" if route.version else "")
        label = route.label if route.best else "undecided"
        console.print(
            _text(
                ("The answer", "bold"),
                " for ",
                (head, "bold"),
                ": ",
                (label, "bold green" if route.best and route.certain else "bold yellow"),
            )
        )
        if not route.certain or route.best is None:
            console.print(
                Padding(
                    _text(("uncertain: " if not route.certain else "", "yellow"), route.reason or ""),
                    (0, 0, 0, 2),
                    expand=False,
                )
            )
        best = route.best.backend if route.best else None
        for backend in sorted(route.backends, key=lambda b: b.backend != best):  # the best route first
            if backend.option is not None:
                option = backend.option
                console.print(Padding(_text((f"{option.label}", "bold")), (0, 0, 0, 2), expand=False))
                if option.steps:
                    steps = Table.grid(padding=(0, 1))
                    steps.add_column(no_wrap=True)
                    steps.add_column(ratio=1)
                    for number, step in enumerate(option.steps, 1):
                        state = step.check.state if step.check else "not checked"
                        checked = state if state == "not checked" else f"checked: {state}"
                        what = _text((step.setting, "cyan"))
                        if step.recipe:  # a build step: its commands at this version (answer/steps.py)
                            what.append("\n")
                            what.append_text(_text(("the whole build, in order:", _DIM)))
                            for line in step.recipe:
                                what.append("\n")  # one line each (a line end in one is shown, not obeyed)
                                what.append_text(_text(("  " + line, "")))
                        if verbose:
                            what.append("\n")
                            what.append_text(_text((f"{step.workaround}; {_where(step.evidence)}; {checked}", _DIM)))
                        steps.add_row(f"{number}.", what)
                    console.print(Padding(steps, (0, 0, 0, 4)))
                for done in option.satisfied:  # a step the installed tree already satisfies
                    where = _where(done.evidence)
                    console.print(
                        Padding(
                            _text(
                                ("already done: ", _DIM),
                                done.workaround,
                                ((f" ({where})" if verbose and where else ""), _DIM),
                            ),
                            (0, 0, 0, 4),
                            expand=False,
                        )
                    )
                for condition in option.conditions:  # what must hold (a driver window), from the cells the route names
                    console.print(Padding(_text(("if: ", _DIM), condition), (0, 0, 0, 4), expand=False))
                if backend.machine is not None:  # the Route's word from this machine's runs (decide's machine=)
                    said = backend.machine
                    console.print(
                        Padding(
                            _text(
                                (f"on this machine: {said.state}", "yellow"),
                                f" — {said.reason}",
                                ((f" ({', '.join(said.evidence)})" if verbose and said.evidence else ""), _DIM),
                            ),
                            (0, 0, 0, 4),
                            expand=False,
                        )
                    )
                elif not option.steps and not option.satisfied and not option.conditions:
                    runtime = matrix.cells.get(("runtime", route.target))
                    if runtime is not None and runtime.status.value == "blocked":  # the log's runs used no GPU
                        console.print(
                            Padding(
                                _text(
                                    ("no release setting to change, but the runs used no GPU: ", "yellow"),
                                    runtime.summary,
                                    " — `gfxgate doctor --log LOG` says what this "
                                    "machine lacks (the runner, the driver)",
                                ),
                                (0, 0, 0, 4),
                                expand=False,
                            )
                        )
                    else:
                        console.print(Padding(_text(("nothing to change", _DIM)), (0, 0, 0, 4), expand=False))
            elif backend.state == "undecided":
                console.print(
                    Padding(
                        _text((f"{backend.title}: undecided", "yellow"), f" — {'; '.join(backend.undecided)}"),
                        (0, 0, 0, 2),
                        expand=False,
                    )
                )
            elif verbose:
                console.print(
                    Padding(
                        _text((f"{backend.title}: no route", _DIM), f" — {'; '.join(backend.refused)}"),
                        (0, 0, 0, 2),
                        expand=False,
                    )
                )
        for beyond in route.beyond:  # routes beyond the official release (docs/forks.md), after the official ones
            if beyond.option is None:
                if verbose or beyond.state == "undecided":
                    console.print(
                        Padding(
                            _text(
                                (
                                    f"or {beyond.route}: {beyond.state}",
                                    "yellow" if beyond.state == "undecided" else _DIM,
                                ),
                                f" — {'; '.join(beyond.reasons)}",
                            ),
                            (0, 0, 0, 2),
                            expand=False,
                        )
                    )
                continue
            console.print(
                Padding(
                    _text(
                        ("or ", _DIM),
                        (beyond.option.label, "bold"),
                        (f" (beyond the official release: {beyond.source}@{beyond.version})", _DIM),
                    ),
                    (0, 0, 0, 2),
                    expand=False,
                )
            )
            for condition in beyond.option.conditions:
                console.print(Padding(_text(("if: ", _DIM), condition), (0, 0, 0, 4), expand=False))
            for number, step in enumerate(beyond.option.steps, 1):
                what = _text((f"{number}. ", ""), (step.setting, "cyan"))
                if verbose:
                    what.append_text(_text((f"\n{step.workaround}; {_where(step.evidence)}", _DIM)))
                console.print(Padding(what, (0, 0, 0, 4), expand=False))
        if route.runtime:
            console.print(
                Padding(
                    _text(("runtime: ", "bold"), f"{route.runtime.outcome} — {route.runtime.summary}"),
                    (0, 0, 0, 2),
                    expand=False,
                )
            )
        recorded = f"recorded on {route.target}: "  # app/scan.py recorded_runs: rules/runtime.yaml's runs
        for note in (n for n in matrix.notes if n.startswith(recorded)):
            console.print(
                Padding(
                    _text(("recorded: ", "bold"), note.removeprefix(recorded).rsplit(" [", 1)[0]),
                    (0, 0, 0, 2),
                    expand=False,
                )
            )


def _layers(console, matrix: GateMatrix, verbose: bool) -> None:
    status_width = max(len("override-required"), *(len(t) for t in matrix.targets))
    if len(matrix.targets) == 1:
        groups = [list(matrix.targets)]
    else:  # as many target columns as the width holds beside a wrapped layer column; more go in another table
        per_table = max(1, (console.width - 16) // (status_width + 3))
        groups = [list(matrix.targets[i : i + per_table]) for i in range(0, len(matrix.targets), per_table)]
    for number, group in enumerate(groups):
        if number:
            console.print()
        single = len(matrix.targets) == 1
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=single)
        if single:
            table.add_column("Layer", no_wrap=True, min_width=max(len(layer.title) for layer in matrix.layers))
        else:
            table.add_column("Layer", overflow="fold", min_width=13)
        for target in group:
            table.add_column(inert(target), no_wrap=True, min_width=status_width)
        if single:
            table.add_column("why", overflow="ellipsis", no_wrap=True, ratio=1)
        for layer in matrix.layers:
            verdicts = {v.target: v for v in matrix.row(layer.id)}
            cells = [_text(layer.title)]
            for target in group:
                verdict = verdicts.get(target)
                status = verdict.status.value if verdict else ""
                cells.append(_text((status, STYLES.get(status, ""))))
            if single:
                why = _text(verdicts[group[0]].summary if group[0] in verdicts else "")
                why.overflow, why.no_wrap = "ellipsis", True
                cells.append(why)
            table.add_row(*cells)
        console.print(table)


def _evidence(console, matrix: GateMatrix) -> None:
    console.print(_text(("Evidence", "bold")))
    for layer in matrix.layers:
        console.print(_text((layer.title, "bold")))
        for verdict in matrix.row(layer.id):
            console.print(
                Padding(
                    _text(
                        (verdict.target, "bold"),
                        " ",
                        (verdict.status.value, STYLES.get(verdict.status.value, "")),
                        ": ",
                        verdict.summary,
                    ),
                    (0, 0, 0, 2),
                    expand=False,
                )
            )
            for evidence in verdict.evidence:
                where = str(evidence.location) if evidence.location else evidence.source
                console.print(Padding(_text((where, "cyan"), "  ", evidence.text or ""), (0, 0, 0, 4), expand=False))
            if not verdict.evidence and verdict.reason:
                console.print(Padding(_text(verdict.reason), (0, 0, 0, 4), expand=False))
            if verdict.remedy:
                console.print(Padding(_text(("remedy: ", "bold"), verdict.remedy), (0, 0, 0, 4), expand=False))


def render(matrix: GateMatrix, *, width: int = 100, color: bool = False, verbose: bool = False) -> str:
    """The matrix as terminal text of at most ``width`` columns."""
    console = _console(max(width, 40), color)
    sources = ", ".join(f"{s.name}@{s.ref}" for s in matrix.sources)
    console.print(
        _text(("gfxgate", "bold"), f" · {', '.join(matrix.targets)}", (f" · {sources}" if sources else "", _DIM))
    )
    release = next((note for note in matrix.notes if note.startswith("answers for ")), None)
    if release:  # which release the answer is for and how old it is (gate/scan.py: release_note)
        console.print(_text((release, _DIM)))
    console.print()
    _answer(console, matrix, verbose)
    console.print()
    _layers(console, matrix, verbose)
    if verbose:
        console.print()
        _evidence(console, matrix)
        if matrix.notes:
            console.print()
            console.print(_text(("Notes", "bold")))
            for note in matrix.notes:
                console.print(_text("  ", note))
    else:
        console.print(_text(("Evidence, remedies and notes: add -v (or --format md / json).", _DIM)))
    text = console.file.getvalue()
    # rich pads wrapped and tabled lines to the width; trailing blanks only make a copied answer untidy
    return "\n".join(line.rstrip(" ") for line in text.split("\n")) if not color else text


def markdown_text(markdown: str, *, width: int = 100, color: bool = False) -> str:
    """A Markdown report laid out for a terminal (headings, wrapped paragraphs, tables fitted to ``width``): the text
    format of the commands whose report is a document rather than a matrix. The Markdown's text is already escaped
    by the formatter that wrote it; control characters are made inert before rich reads it."""
    console = _console(max(width, 40), color)
    console.print(Markdown(inert_text(markdown), hyperlinks=False, code_theme="ansi_dark"))
    text = console.file.getvalue()
    return "\n".join(line.rstrip(" ") for line in text.split("\n")) if not color else text


def wrap_lines(text: str, *, width: int = 100) -> str:
    """Plain text of line-oriented formatters (diagnose, trace, history, diff, artifacts) fitted to ``width``: a
    longer line wraps at spaces with its continuation indented four columns past its own indent; control
    characters from logs and servers made inert first."""
    width = max(width, 20)
    out = []
    for line in inert_text(text).split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out += textwrap.wrap(
            line, width=width, subsequent_indent=indent + "    ", break_on_hyphens=False, replace_whitespace=False
        ) or [""]
    return "\n".join(out)


_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}


def _sgr(text: str, style: str, color: bool) -> str:
    codes = [_SGR[w] for w in style.split() if w in _SGR]
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if color and codes and text else text


def _split(word: list[tuple[str, str]], n: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The first ``n`` characters of a word of segments, and the rest."""
    head, rest = [], []
    for text, style in word:
        if n <= 0:
            rest.append((text, style))
        elif len(text) <= n:
            head.append((text, style))
            n -= len(text)
        else:
            head.append((text[:n], style))
            rest.append((text[n:], style))
            n = 0
    return head, rest


class Lines:
    """Terminal text built line by line, for the formatters of results that are lists rather than a matrix (doctor):
    parts are (text, style) pairs or plain text, made inert; a line wraps at spaces to the width with its indent (a
    word longer than the line is split); a table's last column is cut with "…". Colour (ANSI SGR) only when asked.
    No rich: a report of a few hundred lines lays out in milliseconds."""

    def __init__(self, *, width: int = 100, color: bool = False) -> None:
        self.width = max(width, 40)
        self.color = color
        self.rows: list[str] = []

    def line(self, *parts: tuple[str, str] | str, indent: int = 0) -> None:
        # words are runs of non-spaces, each a list of (text, style) segments (a word may span parts: "(" + "label")
        words: list[list[tuple[str, str]]] = []
        word: list[tuple[str, str]] = []
        for part in parts:
            text, style = (inert(part[0]), part[1]) if isinstance(part, tuple) else (inert(part), "")
            for n, chunk in enumerate(text.replace("\n", " ").split(" ")):
                if n and word:  # a space ends the word before it
                    words.append(word)
                    word = []
                if chunk:
                    word.append((chunk, style))
        if word:
            words.append(word)
        room = self.width - indent
        out: list[str] = []
        current: list[tuple[str, str]] = []
        used = 0
        for word in words:
            size = sum(len(t) for t, _ in word)
            while size > room:  # longer than a line: split it
                if current:
                    out.append(self._join(current))
                    current, used = [], 0
                head, word = _split(word, room)
                out.append(self._join(head))
                size -= room
            if used and used + 1 + size > room:
                out.append(self._join(current))
                current, used = [], 0
            if used:
                current.append((" ", ""))
                used += 1
            current += word
            used += size
        out.append(self._join(current))
        self.rows += [" " * indent + row if row else row for row in out]

    def _join(self, segments: list[tuple[str, str]]) -> str:
        return "".join(_sgr(t, st, self.color) for t, st in segments)

    def blank(self) -> None:
        self.rows.append("")

    def table(self, header: tuple[str, ...], rows: list[tuple[tuple[str, str], ...]]) -> None:
        """Columns as wide as their widest cell; the last takes the rest of the width and is cut with "…"."""
        widths = [max([len(header[i])] + [len(inert(r[i][0])) for r in rows]) for i in range(len(header) - 1)]
        rest = max(self.width - sum(w + 2 for w in widths), 8)

        def cut(text: str) -> str:
            return text if len(text) <= rest else text[: rest - 1] + "…"

        self.rows.append("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  " + header[-1])
        self.rows.append("─" * min(self.width, sum(w + 2 for w in widths) + rest))
        for row in rows:
            cells = [_sgr(inert(text).ljust(w), style, self.color) for (text, style), w in zip(row, widths)]
            self.rows.append("  ".join(cells) + "  " + _sgr(cut(inert(row[-1][0])), row[-1][1], self.color))

    def text(self) -> str:
        return "\n".join(row.rstrip(" ") for row in self.rows) + "\n"
