"""What a person sees when typing the command (issue 29): the installed script on a real pseudo-terminal of 80
columns, against the same command piped.

On a terminal the scan prints text (the answer first, a compact layer table, evidence behind -v), wrapped to the
terminal's width, coloured unless NO_COLOR; piped or with -o it keeps Markdown, so scripts and goldens don't change.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def on_terminal(exe: str, args: list[str], *, columns: int = 80, env: dict | None = None, timeout: float = 30) -> str:
    """Run ``exe args`` with stdout and stderr on a pty of ``columns`` × 40 and return what it wrote there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "GFXGATE_FORMAT")}
    environ.update({"TERM": "xterm-256color", **(env or {})})
    process = subprocess.Popen([exe, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=environ)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the follower side closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_scan_on_an_80_column_terminal_shows_the_answer_first_and_fits(gfxgate_exe):
    screen = on_terminal(gfxgate_exe, ["scan", "--target", "gfx900"])
    assert "\x1b[" in screen  # coloured on a terminal
    lines = ANSI.sub("", screen).rstrip("\n").split("\n")
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    answer = next(i for i, line in enumerate(lines) if line.startswith("The answer for gfx900"))
    assert answer < 15
    # the route's steps follow the answer, and the layers come after them as one row each
    assert any(line.strip().startswith("1. ") for line in lines[answer : answer + 8])
    table = next(i for i, line in enumerate(lines) if line.startswith("Layer"))
    assert table > answer
    assert sum(1 for line in lines[table:] if re.match(r"(Official ROCm matrix|Release packaging)\s+\S", line)) == 2
    assert not any(line.startswith("|") for line in lines)  # not the Markdown table


def test_no_color_and_a_narrow_terminal(gfxgate_exe):
    screen = on_terminal(gfxgate_exe, ["scan", "--target", "gfx900,gfx1030"], columns=60, env={"NO_COLOR": "1"})
    assert "\x1b" not in screen
    assert max(len(line) for line in screen.split("\n")) <= 60


def test_piped_and_written_output_keep_markdown(gfxgate_exe, gfxgate_cli, tmp_path):
    piped = gfxgate_cli("scan", "--target", "gfx900", check=True)
    assert piped.stdout.startswith("# gfxgate gate matrix: gfx900")
    screen = on_terminal(gfxgate_exe, ["scan", "--target", "gfx900", "-o", str(tmp_path / "m.md")])
    assert "wrote" in screen
    assert (tmp_path / "m.md").read_text().startswith("# gfxgate gate matrix: gfx900")


def test_verbose_text_holds_every_cell_evidence(gfxgate_cli):
    import json

    data = json.loads(gfxgate_cli("scan", "--target", "gfx900", "--format", "json", check=True).stdout)
    text = gfxgate_cli(
        "scan", "--target", "gfx900", "--format", "text", "-v", check=True, env={**os.environ, "COLUMNS": "400"}
    ).stdout
    short = gfxgate_cli("scan", "--target", "gfx900", "--format", "text", check=True).stdout
    locations = [
        e["where"]
        for layer in data["layers"]
        for cell in layer["cells"]
        for e in cell.get("evidence", [])
        if e.get("where")
    ]
    assert len(locations) > 5
    assert not [where for where in locations if where not in text]
    assert sum(where in short for where in locations) < len(locations)  # folded without -v


@pytest.mark.parametrize(
    "hostile", ["\x1b]0;owned\x07", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "a\rb", "\u009b31m"]
)
def test_terminal_text_is_inert(hostile):
    from gfxgate.report.terminal import render
    from gfxgate.report.text import inert

    assert "\x1b" not in inert(hostile) and "\r" not in inert(hostile) and "\u009b" not in inert(hostile)
    out = render(_matrix_with_text(hostile), width=80, color=False, verbose=True)
    assert inert(hostile)[:4] in out  # shown as an escape, not run
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert render(_matrix_with_text(hostile), width=80, color=True).count("\x1b[") > 0  # rich's own styling only


def _matrix_with_text(text: str):
    """The shipped gfx900 matrix with ``text`` in every summary, evidence text, remedy and note."""
    import dataclasses

    from gfxgate.gate.scan import scan_matrix
    from gfxgate.targets import catalog

    matrix = scan_matrix([catalog().parse("gfx900")])
    cells = {
        key: dataclasses.replace(
            verdict,
            summary=text + verdict.summary,
            remedy=text if verdict.remedy else None,
            evidence=tuple(dataclasses.replace(e, text=text + e.text) for e in verdict.evidence),
        )
        for key, verdict in matrix.cells.items()
    }
    return dataclasses.replace(matrix, cells=cells, notes=(*matrix.notes, text), targets=matrix.targets)


def test_line_oriented_text_wraps_on_a_terminal_only(gfxgate_exe, gfxgate_cli, tmp_path):
    """diagnose's text (like trace, history, diff and artifacts) fits the terminal; piped it keeps one line per
    item for scripts; either way a log's control sequences arrive as visible escapes."""
    from tests.conftest import CHECKOUT

    log = tmp_path / "o.log"
    log.write_text(
        (CHECKOUT / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log").read_text()
        + 'time=2025-10-05T10:00:09.000+02:00 level=INFO msg="x\x1b]0;owned\x07"\n'
    )
    screen = ANSI.sub("", on_terminal(gfxgate_exe, ["diagnose", str(log)], columns=60))
    assert max(len(line) for line in screen.split("\n")) <= 60
    assert "\x07" not in screen and "\x1b]" not in screen
    piped = gfxgate_cli(
        "diagnose", str(log), "--format", "text", env={k: v for k, v in os.environ.items() if k != "COLUMNS"}
    ).stdout
    assert max(len(line) for line in piped.split("\n")) > 60
    assert "\x07" not in piped and "\x1b" not in piped
