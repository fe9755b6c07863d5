"""The README shows real output: its gate-matrix excerpt must be the current samples/gfx900.md table."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_excerpt_matches_the_sample():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- excerpt of samples/gfx900.md")
    excerpt = readme[start:readme.index("<!-- end of excerpt -->")].splitlines()[1:]
    rows = [line for line in excerpt if line.startswith("|")]
    assert len(rows) >= 11  # header, separator, nine layers
    sample = (ROOT / "samples" / "gfx900.md").read_text(encoding="utf-8").splitlines()
    for row in rows:
        assert row in sample, f"README row is stale: {row[:60]}"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python3 -m pip install -e '.[test]' && python3 -m pytest"
    assert command in readme
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_timeline_answer_matches_the_sample():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- excerpt of samples/timeline.md (gfx900)")
    excerpt = [line for line in readme[start:readme.index("<!-- end of timeline excerpt -->")].splitlines()[1:] if line.strip()]
    assert excerpt[0].startswith("gfx900: ") and "from v0.12.4 ROCm needs a source build and the rocBLAS files" in excerpt[0]
    assert len(excerpt) >= 5  # the sentence and one line of evidence per clause
    sample = (ROOT / "samples" / "timeline.md").read_text(encoding="utf-8").splitlines()
    for line in excerpt:
        assert line in sample, f"README timeline excerpt is stale: {line[:60]}"


def test_readme_diagnose_excerpt_is_the_tools_output():
    """Every line of the README's diagnose excerpt is in today's output (upstream-located lines aside: CI has no clone)."""
    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.diagnose.render import render_md

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- excerpt of gfxgate diagnose samples/logs/ollama-0.12.3-override-rocblas.log -->")
    excerpt = readme[start:readme.index("<!-- end of diagnose excerpt -->")].splitlines()[1:]
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)  # the report names the log by the path it was given
    try:
        output = render_md(diagnose_inputs(["samples/logs/ollama-0.12.3-override-rocblas.log"], locate=False)).splitlines()
    finally:
        os.chdir(cwd)
    upstream_only = ("  - upstream:", "  - printed by:", "  - the log line was written at")
    checked = [line for line in excerpt if line.strip() and not line.startswith(upstream_only)]
    assert len(checked) >= 15
    for line in checked:
        assert line in output, f"README diagnose excerpt is stale: {line[:80]}"


def test_readme_real_log_excerpt_is_the_tools_output():
    """The README's diagnosed real llama-server log (issue 31 item 5): every line is in today's output, in order."""
    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.diagnose.render import render_md

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    name = "samples/logs/llama-server-11669-vulkan-device-none.log"
    start = readme.index(f"<!-- excerpt of gfxgate diagnose {name} -->")
    excerpt = [line for line in readme[start:readme.index("<!-- end of real-log excerpt -->")].splitlines()[1:] if line.strip()]
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        output = [line for line in render_md(diagnose_inputs([name], locate=False)).splitlines() if line.strip()]
    finally:
        os.chdir(cwd)
    assert excerpt[0] == "### Conclusion" and "ran on the CPU" in excerpt[1] and len(excerpt) >= 8
    at = output.index(excerpt[0])
    assert output[at:at + len(excerpt)] == excerpt, "README real-log excerpt is stale"


def test_readme_lists_every_matcher():
    """The README's paragraph of matchers names each registered matcher (gfxgate/matchers/, one module each) once."""
    import re

    from gfxgate.matchers import MATCHERS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("Matchers, one module each under `gfxgate/matchers/`:")
    paragraph = readme[start:readme.index("\n\n", start)]
    named = re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", paragraph)
    assert len(named) == len(set(named)), named
    assert sorted(named) == sorted(MATCHERS)


def test_readme_terminal_sample_is_the_tools_text():
    """The README shows what a terminal of 80 columns shows: samples/gfx900.txt, which `gfxgate samples` writes."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- terminal sample: samples/gfx900.txt")
    block = readme[start:readme.index("<!-- end of terminal sample -->")]
    shown = block.split("```text\n", 1)[1].rsplit("```", 1)[0]
    assert shown == (ROOT / "samples" / "gfx900.txt").read_text(encoding="utf-8")
    assert max(len(line) for line in shown.splitlines()) <= 80
    answer = next(i for i, line in enumerate(shown.splitlines()) if line.startswith("The answer for gfx900"))
    assert answer < 15


def test_readme_h200_excerpts_match_the_sample():
    """The real-GPU tables (benchmarks/README.md, the study's protocol on an H200) are rows of
    samples/h200/sweep-report.md (generated from the committed worklog)."""
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    sample = (ROOT / "samples" / "h200" / "sweep-report.md").read_text(encoding="utf-8").splitlines()
    for start, end, count in (("<!-- excerpt of samples/h200/sweep-report.md (Results)", "<!-- end of h200 excerpt -->", 9),
                              ("<!-- excerpt of samples/h200/sweep-report.md (speed)", "<!-- end of h200 speed excerpt -->", 9)):
        begin = readme.index(start)
        rows = [line for line in readme[begin:readme.index(end, begin)].splitlines()[1:] if line.startswith("|")]
        assert len(rows) == count  # header, separator, seven num_gpu values
        for row in rows:
            assert row in sample, f"README h200 row is stale: {row[:60]}"
