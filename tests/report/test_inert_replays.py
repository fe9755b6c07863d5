"""Issue 28, defects 1-3 replayed with the issue-13 harness: hostile text from a log, a server or a file name is inert
in the report, and the run stays within the bounds (``replay``: the exit code, no traceback, under 5 s of CPU and
512 MB of peak RSS of the gfxgate process, nothing but the named output written).

tests/test_inert_outputs.py holds the same defects through the script without the bounds, and the escaper and the
fuzz harness in depth; here each defect is replayed as the issue describes it, and ``scan --log`` is added (the
issue: "in every formatter, including scan/check/diff evidence"; diff is there, scan's evidence from a log here).
Markdown is read with cmark-gfm (GitHub's parser and extensions): raw HTML is what it writes as
``<!-- raw HTML omitted -->``, a link or an image an ``<a``/``<img`` element.
"""

from __future__ import annotations

import re

from benchmarks import fuzz
from tests.diagnose import logs
from tests.cli.test_replays import env, replay, work  # noqa: F401 - env, work: fixtures

HTML = (
    "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](http://evil.example/) ![i](http://evil.example/i.png)"
)
TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# OSC 0 (window title), OSC 8 (a hidden hyperlink), a bare CR (overwrites the line), U+009B (a one-character CSI)
ESCAPES = "\x1b]0;owned\x07 \x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \rfake line \x9b2J \x7f"
NAME = "a``b <img src=x onerror=alert(1)> [l](evil.example) www.evil.example.log"


def _log(extra: str, where: str = "rocBLAS error", version: str = "") -> str:
    """The v0.12.3 rocBLAS crash log with ``extra`` after the first line holding ``where``, ``version`` after the
    override's value."""
    lines, done = [], False
    for line in logs.ollama_0_12_3_rocblas():
        if not done and where in line:
            line, done = line + extra, True
        lines.append(line.replace("HSA_OVERRIDE_GFX_VERSION:9.0.0", "HSA_OVERRIDE_GFX_VERSION:9.0.0" + version))
    assert done
    return "\n".join(lines) + "\n"


def _live(html: str) -> list[str]:
    """What of ``html`` a hostile text made live: raw HTML, links, images, the heading and emphasis it wrote."""
    return re.findall(r"<!-- raw HTML omitted -->|<a |<img|<script|<h1>live heading|<em>em</em>", html)


def test_1_diagnose_md_keeps_a_log_line_and_the_file_name_inert(gfxgate_exe, work, env):
    """A log line with a double backtick, raw HTML, a link and a bare CR; a file name with backticks and HTML."""
    (work / NAME).write_text(_log(" `` " + HTML + "\r# live heading *em*"), encoding="utf-8")
    run = replay("1 diagnose md", gfxgate_exe, ["diagnose", NAME], cwd=work, env=env, code=0)
    html = fuzz.gfm_html(run.stdout)
    assert _live(html) == [], _live(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the line is there, whole, as text
    assert html.count("<h2>") == 1  # the file name's heading is one heading


def test_1_scan_md_keeps_the_evidence_of_a_log_inert(gfxgate_exe, work, env):
    """scan --log: the runtime row's evidence quotes the log's lines (and its name) in the gate matrix."""
    (work / NAME).write_text(_log(" `` " + HTML + " | x", where="error loading llama server"), encoding="utf-8")
    run = replay(
        "1 scan --log md", gfxgate_exe, ["scan", "-t", "gfx900", "--offline", "--log", NAME], cwd=work, env=env, code=0
    )
    assert "error loading llama server" in run.stdout and "alert(1)" in run.stdout
    html = fuzz.gfm_html(run.stdout)
    assert _live(html) == [], _live(html)
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows and all(fuzz._row_has_cells(row, 2) for row in rows), rows  # no pipe of the log split a cell


def test_2_sweep_report_keeps_a_fence_in_the_server_log_and_the_version_inert(gfxgate_exe, work, env):
    """A crash excerpt line of three backticks closed the excerpt's fence; the --version answer was printed raw."""
    from gfxgate.sweep.worklog import WorklogWriter

    with WorklogWriter(work / "w.jsonl") as writer:
        for n, outcome in enumerate(("ok", "crash")):
            writer.append(
                fuzz.sweep_record(
                    n,
                    outcome,
                    "server",
                    server_version="llama.cpp ``` " + HTML,
                    crash={
                        "excerpt": ["llama_model_load: loaded", "```", HTML, "# after the fence", "`" * 300],
                        "key_frames": ["ggml_vk_compute"],
                    }
                    if outcome == "crash"
                    else None,
                )
            )
    run = replay("2 sweep report", gfxgate_exe, ["sweep", "report", "w.jsonl"], cwd=work, env=env, code=0)
    html = fuzz.gfm_html(run.stdout)
    assert _live(html) == [], _live(html)
    assert "<h1>after the fence" not in html
    pre = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", html, re.S)
    assert pre and "# after the fence" in pre.group(1) and "```" in pre.group(1)  # the whole excerpt, one block
    assert "llama.cpp" in html and "&lt;script&gt;" in html  # the version answer, shown as text


def test_3_diagnose_text_holds_no_terminal_control(gfxgate_exe, work, env):
    """OSC 0, OSC 8, CR, U+009B and DEL in a log line and in the file name reach no terminal (text and md)."""
    name = "x\x1b]0;t\x07.log"
    (work / name).write_text(_log(" " + ESCAPES, version=ESCAPES.replace(" ", "")), encoding="utf-8")
    for fmt in ("text", "md"):
        run = replay(f"3 diagnose {fmt}", gfxgate_exe, ["diagnose", "--format", fmt, name], cwd=work, env=env, code=0)
        assert not TERMINAL.search(run.stdout.replace("\n", "")), repr(run.stdout)
        assert "␛]0;t␇" in run.stdout  # the file name: shown, not acted on
        assert "9.0.0␛]0;owned␇␛]8;;" in run.stdout  # the override's value as the log has it, made visible


def test_3_an_error_line_holds_no_terminal_control(gfxgate_exe, work, env):
    run = replay(
        "3 error line",
        gfxgate_exe,
        ["diagnose", "missing\x1b]0;owned\x07\x9b2J\r.log"],
        cwd=work,
        env=env,
        code=6,
        error="cannot read",
    )
    assert not TERMINAL.search(run.stderr.rstrip("\n")), repr(run.stderr)
    assert "␛]0;owned␇<U+009B>2J␍.log" in run.stderr


def test_1_a_long_text_with_an_at_sign_is_escaped_in_linear_time(gfxgate_exe, work, env):
    """Found by the report fuzz (md:workarounds, case 27,340: 2.1 s of CPU for one report): md_escape's e-mail pattern
    retried every start inside a long run of address characters, so a text holding an "@" and a long word cost the
    square of its length. `diff` reads its reports from files: a 200,000-character summary took about 35 s of CPU."""
    import json

    from gfxgate.gate.scan import scan_matrix
    from gfxgate.report import render
    from gfxgate.targets import catalog

    old = json.loads(render(scan_matrix([catalog().parse("gfx900")]), "json"))
    new = json.loads(json.dumps(old))
    cell = new["layers"][0]["cells"][0]
    cell["status"] = "blocked" if cell["status"] != "blocked" else "allowed"
    cell["summary"] = "mail u@evil.example about " + "a" * 200_000
    (work / "old.json").write_text(json.dumps(old))
    (work / "new.json").write_text(json.dumps(new))
    run = replay(
        "1 diff md, a 200,000-character summary with an @",
        gfxgate_exe,
        ["diff", "old.json", "new.json"],
        cwd=work,
        env=env,
        code=0,
    )
    assert "u@\u2060evil.example" in run.stdout and "a" * 200_000 in run.stdout  # the address unlinked, the text whole
    assert "<a " not in fuzz.gfm_html(run.stdout)


def test_1_a_lt_sign_before_a_kept_code_span_opens_no_autolink(gfxgate_exe, work, env):
    """Found by the report fuzz (md:workarounds, case 99,806): a text part ending in "<" before a code span the text
    holds made '<`ollama@v0.1>' an e-mail autolink (a backtick is an address character; CommonMark reads the
    autolink before the span), live in `diff`'s table from a report file."""
    import json

    from gfxgate.gate.scan import scan_matrix
    from gfxgate.report import render
    from gfxgate.targets import catalog

    old = json.loads(render(scan_matrix([catalog().parse("gfx900")]), "json"))
    new = json.loads(json.dumps(old))
    cell = new["layers"][0]["cells"][0]
    cell["status"] = "blocked" if cell["status"] != "blocked" else "allowed"
    cell["summary"] = "## h-(, <`ollama@v0.1> , `)## h"
    (work / "old.json").write_text(json.dumps(old))
    (work / "new.json").write_text(json.dumps(new))
    run = replay(
        "1 diff md, '<' before a code span", gfxgate_exe, ["diff", "old.json", "new.json"], cwd=work, env=env, code=0
    )
    html = fuzz.gfm_html(run.stdout)
    assert "<a " not in html, html[:2000]
    assert "&lt;<code>ollama@v0.1&gt; , </code>)## h" in html  # the text itself: a "<", then its code span
