"""Text from a log, a server or a file is inert in every output (issue 28, defects 1-3), through the installed script.

Markdown is read with cmark-gfm (cmarkgfm: GitHub's parser, with the extensions GitHub turns on): an injected raw HTML node is
what cmark-gfm writes as ``<!-- raw HTML omitted -->``, a link or an image an ``<a``/``<img`` element. A terminal
output must hold no C0 control but TAB and LF, no DEL, no C1 control, no ESC. The formatters' fuzz harness
(benchmarks/fuzz.py, every result type, hostile text in every field) runs here on one case per hostile piece
and format, each piece in every field.
"""

from __future__ import annotations

import json
import random
import re
import subprocess

import pytest

from benchmarks import fuzz
from tests.diagnose import logs

HTML = (
    "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](http://evil.example/) ![i](http://evil.example/i.png)"
)
TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# OSC 0 (window title), OSC 8 (a hidden hyperlink), a bare CR (overwrites the line), U+009B (a one-character CSI)
ESCAPES = "\x1b]0;owned\x07 \x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \rfake line \x9b2J \x7f"


def html_of(markdown: str) -> str:
    return fuzz.gfm_html(markdown)


def assert_inert_html(html: str) -> None:
    assert "raw HTML omitted" not in html, html
    assert "<a " not in html and "<img" not in html and "<script" not in html, html


def run(exe: str, *args: str, cwd) -> subprocess.CompletedProcess:
    return exe(*args, cwd=cwd, timeout=60)


def rocblas_log(extra: str, version: str = "") -> str:
    """The v0.12.3 rocBLAS crash log, ``extra`` after its rocBLAS error line, ``version`` after the override's value."""
    lines = logs.ollama_0_12_3_rocblas()
    lines = [
        line + extra
        if line.startswith("rocBLAS error")
        else line.replace("HSA_OVERRIDE_GFX_VERSION:9.0.0", "HSA_OVERRIDE_GFX_VERSION:9.0.0" + version)
        for line in lines
    ]
    return "\n".join(lines) + "\n"


# -- defect 1: Markdown injection ----------------------------------------------------------------------------


def test_diagnose_md_keeps_a_hostile_log_line_and_file_name_inert(gfxgate_cli, tmp_path):
    log = tmp_path / "a``b <img src=x onerror=alert(1)> [l](evil.example) www.evil.example.log"
    log.write_text(rocblas_log(" `` " + HTML + "\r# live heading *em*"), encoding="utf-8")
    done = run(gfxgate_cli, "diagnose", log.name, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    html = html_of(done.stdout)
    assert_inert_html(html)
    assert "<h1>live heading" not in html and "<em>em</em>" not in html
    # the evidence line is still there, whole, in one code span
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<h2>") == 1  # the file name's heading: one, its backticks did not open anything


def test_diff_md_keeps_hostile_evidence_inert(gfxgate_cli, tmp_path):
    from gfxgate.gate.scan import scan_matrix
    from gfxgate.report import render
    from gfxgate.targets import catalog

    old = json.loads(render(scan_matrix([catalog().parse("gfx900")]), "json"))
    new = json.loads(json.dumps(old))
    for layer in new["layers"]:
        for cell in layer["cells"]:
            if cell.get("evidence"):
                cell["status"] = "blocked" if cell["status"] != "blocked" else "allowed"
            cell["summary"] = "s `` " + HTML
            for e in cell.get("evidence") or ():
                e["text"] = "``` " + HTML + " | x"
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    done = run(gfxgate_cli, "diff", "old.json", "new.json", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    html = html_of(done.stdout)
    html = html.replace("<!-- raw HTML omitted -->", "", done.stdout.count("<br>"))  # the formatter's own <br>
    assert_inert_html(html)
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| summary |", "| evidence |"))]
    assert rows and all(fuzz._row_has_cells(row, 3) for row in rows), rows  # no pipe of the text split a cell


def test_one_escaper_covers_what_cmark_gfm_reads_as_markup():
    from gfxgate.report.markdown import code, fence, link, md_escape

    for text in (
        "a``b",
        "`",
        "``x``",
        "<b>x</b>",
        "[x](y)",
        "![i](y)",
        "a\rb",
        "a|b",
        "*x*",
        "_x_",
        "~~x~~",
        "- x",
        "# x",
        "1. x",
        "> q",
        "---",
        "www.evil.example",
        "http://evil.example",
        "u@evil.example",
        "&lt;b&gt;",
        "   ",
        "x #",
        "[^1]: n",
        "- [ ] t",
        "<#u@evil.example>",
        "<1@x.y>",
        "`" * 1200,
        "`` a`b ``",
    ):
        for markdown in (
            f"p {md_escape(text)} q",
            md_escape(text),
            f"- {md_escape(text)}",
            f"| a |\n|---|\n| {md_escape(text)} |",
            f"p {code(text)} q",
            f"| a |\n|---|\n| {code(text, cell=True)} |",
            "\n".join(fence([text, "```", "~~~~"])),
        ):
            html = html_of(markdown)
            assert_inert_html(html)
            for tag in (
                "<em>",
                "<strong>",
                "<del>",
                "<h1>",
                "<blockquote>",
                "<hr",
                "<ol",
                "<input",
                "<li><ul>",
                "<sup",
            ):
                assert tag not in html, (text, markdown, html)
            assert html.count("<td>") <= 1 and html.count("<code>") <= 1 and html.count("<pre>") <= 1, (markdown, html)
    for run in (3, 254, 255, 300, 5000):  # cmark-gfm keeps a fence's length in a byte: a line of 255 closed it
        html = html_of("\n".join(fence(["`" * run, "   " + "~" * run, "x"])) + "\n\n# after")
        assert html.count("<pre>") == 1 and "<h1>after</h1>" in html, (run, html[-200:])
    assert link("`w`", "javascript:alert(1)") == "`w`"  # only http(s) is linked
    assert html_of(link("`w`", "https://x.example/a b)(<c>|")).count("<a ") == 1


# -- defect 2: sweep report ----------------------------------------------------------------------------------


def test_sweep_report_keeps_a_fence_in_the_server_log_and_the_version_inert(gfxgate_cli, tmp_path):
    from gfxgate.sweep.worklog import WorklogWriter

    worklog = tmp_path / "w.jsonl"
    with WorklogWriter(worklog) as writer:
        for n, outcome in enumerate(("ok", "crash")):
            writer.append(
                fuzz.sweep_record(
                    n,
                    outcome,
                    "server",
                    server_version="llama.cpp ``` " + HTML,
                    crash={
                        "excerpt": ["llama_model_load: loaded", "```", HTML, "# after the fence", "~~~"],
                        "key_frames": ["ggml_vk_compute"],
                    }
                    if outcome == "crash"
                    else None,
                )
            )
    done = run(gfxgate_cli, "sweep", "report", str(worklog), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "```" + HTML not in done.stdout
    html = html_of(done.stdout)
    assert_inert_html(html)
    assert "<h1>after the fence" not in html
    pre = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", html, re.S)
    assert pre and "# after the fence" in pre.group(1) and "```" in pre.group(1)  # the whole excerpt, in its fence


# -- defect 3: terminal escapes ------------------------------------------------------------------------------


def test_diagnose_text_holds_no_terminal_escape(gfxgate_cli, tmp_path):
    log = tmp_path / "x\x1b]0;t\x07.log"
    log.write_text(rocblas_log(" " + ESCAPES, version=ESCAPES.replace(" ", "")), encoding="utf-8")
    done = run(gfxgate_cli, "diagnose", "--format", "text", log.name, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "9.0.0␛]0;owned␇␛]8;;" in done.stdout  # the override's value as the log has it, made visible
    assert not TERMINAL.search(done.stdout), repr(done.stdout)
    assert "␛]0;t␇" in done.stdout  # shown, not acted on
    md = run(gfxgate_cli, "diagnose", log.name, cwd=tmp_path)
    assert not TERMINAL.search(md.stdout), repr(md.stdout)  # Markdown printed on a terminal too


def test_an_error_line_holds_no_terminal_escape(gfxgate_cli, tmp_path):
    done = run(gfxgate_cli, "diagnose", "missing\x1b]0;owned\x07\x9b2J.log", cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.startswith("gfxgate: error:")
    assert not TERMINAL.search(done.stderr), repr(done.stderr)


def test_inert_replaces_every_control_but_tab():
    from gfxgate.report.text import inert

    text = "".join(map(chr, range(0xA0))) + "\u2028"
    out = inert(text)
    assert not TERMINAL.search(out) and "\n" not in out and "\t" in out
    assert "␛" in out and "<U+009B>" in out and "␡" in out


# -- the formatters' fuzz harness, a few hundred cases per format ---------------------------------------------


@pytest.fixture(scope="module")
def bases():
    return {kind.name: kind.build() for kind in fuzz.REPORT_TYPES}


@pytest.mark.parametrize("name", sorted(fuzz.report_formats()))
def test_every_formatter_stays_inert_under_hostile_text(name, bases):
    """One case per hostile piece (77): case n starts the hostile text of every field with a piece, rotated so that
    every piece lands in every field (150 random cases, before, left ~1% of the pairs out, at twice the CPU);
    the rest of each text is random as before."""
    kind, fmt = fuzz.report_formats()[name]
    rng = random.Random(f"tests-{name}")
    for case in range(len(fuzz.HOSTILE_PIECES)):
        problem, table = fuzz.report_case(kind, fmt, bases[kind.name], rng, rotate=case)
        assert problem is None, (case, problem, table)


def test_the_harness_finds_an_unescaped_field():
    """The oracle fails on raw text: a formatter that printed a field as is would be found."""
    assert fuzz.md_findings("p <img src=x> q", "p zq0q q") is not None
    assert fuzz.md_findings("p `a` *b* q", "p `zq0q` q") is not None  # a span closed early: what follows is live
    assert fuzz.md_findings("p a\nb q", "p zq0q q") is not None  # a line the text added
    assert fuzz.md_findings("| a | b |\n|---|---|\n| x|y | c |", "| a | b |\n|---|---|\n| zq0q | c |") is not None
    assert fuzz.text_findings("a\x1b[31mb") is not None and fuzz.text_findings("a\tb\n") is None


def test_pins_show_keeps_a_hostile_url_off_the_terminal(gfxgate_cli, tmp_path):
    text = (fuzz.ROOT / "rules" / "pins.toml").read_text(encoding="utf-8")
    hostile = text.replace(
        'url = "https://github.com/ollama/ollama.git"',
        'url = "https://github.com/ollama/ollama.git\\u001b]0;owned\\u0007\\u009b2J"',
        1,
    )
    assert hostile != text
    (tmp_path / "pins.toml").write_text(hostile, encoding="utf-8")
    done = run(gfxgate_cli, "pins", "show", "--pins", "pins.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ollama.git␛]0;owned␇<U+009B>2J" in done.stdout
    assert not TERMINAL.search(done.stdout), repr(done.stdout)
