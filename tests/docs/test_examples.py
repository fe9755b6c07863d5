"""The README and docs/ show real output and real commands: every marked example is checked against what gfxgate does
now (the markers and their kinds: tests/docs/examples.py). Formerly tests/test_readme.py."""

from __future__ import annotations

import re

import pytest

from tests.docs.examples import ROOT, examples, gfxgate_lines, referenced_links, unmarked_fences

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# pages whose every fenced block is a marked example (pages added by other topics mark the blocks they want checked)
MARKED_PAGES = (
    "README.md",
    "docs/index.md",
    "docs/commands/",
    "docs/evidence.md",
    "docs/statuses.md",
    "docs/bounds.md",
    "docs/testing.md",
    "docs/dependencies.md",
    "docs/ollama-v0.30.md",
)
# docs pages that other topics are adding at the same time: the index links them before they exist
PENDING_PAGES = {"docs/sweep.md", "docs/slurm.md", "docs/diagnose.md", "docs/hostile-input.md", "docs/nvidia.md"}

ALL = [example for page in PAGES for example in examples(page.relative_to(ROOT))]


def _id(example) -> str:
    return f"{example.where}:{example.kind}"


def test_every_kind_of_page_has_examples():
    kinds = {example.kind for example in ALL}
    assert {"file", "lines", "run", "commands", "ci", "tested-by"} <= kinds, kinds
    assert len(ALL) >= 20


@pytest.mark.parametrize(
    "page", [p.relative_to(ROOT).as_posix() for p in PAGES if p.relative_to(ROOT).as_posix().startswith(MARKED_PAGES)]
)
def test_every_block_of_these_pages_is_a_checked_example(page):
    assert unmarked_fences(ROOT / page) == [], f"{page}: fenced blocks without a <!-- check: ... --> marker"


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in [*PAGES, ROOT / "ARCHITECTURE.md"]])
def test_relative_links_lead_somewhere(page):
    base = (ROOT / page).parent
    broken = []
    for line, target in referenced_links((ROOT / page).relative_to(ROOT)):
        path = (base / target).resolve()
        if not path.exists() and path.relative_to(ROOT).as_posix() not in PENDING_PAGES:
            broken.append(f"{page}:{line}: {target}")
    assert broken == []


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "file"], ids=_id)
def test_file_example_is_the_file(example):
    (path,) = example.args
    assert example.text == (ROOT / path).read_text(encoding="utf-8"), f"{example.where}: stale copy of {path}"


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "lines"], ids=_id)
def test_lines_example_is_an_excerpt(example):
    (path,) = example.args
    source = (ROOT / path).read_text(encoding="utf-8").splitlines()
    assert len(example.lines()) >= 3
    for line in example.lines():
        assert line in source, f"{example.where}: stale excerpt of {path}: {line[:80]}"


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "run"], ids=_id)
def test_run_example_is_the_tools_output(example, monkeypatch, capsys):
    from gfxgate.cli import main

    monkeypatch.chdir(ROOT)  # reports name their inputs by the paths they were given
    with pytest.raises(SystemExit) as done:
        main(list(example.args))
    out = capsys.readouterr().out.splitlines()
    assert done.value.code in (0, None)
    shown = [line for line in example.lines() if not line.startswith(example.excepts)]
    assert len(shown) >= 5
    at = 0
    for line in shown:  # in the order the tool prints them
        assert line in out[at:], (
            f"{example.where}: not in `gfxgate {' '.join(example.args)}` (after line {at}): {line[:80]}"
        )
        at = out.index(line, at) + 1


def _command(words: list[str]):
    import click

    from gfxgate.cli.group import cli

    command: click.Command = cli
    path = ["gfxgate"]
    rest = list(words)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            if command is cli:
                raise AssertionError(f"gfxgate has no command {rest[0]!r}")
            break  # a group's argument (e.g. `pins NAME`), not a sub-command
        path.append(rest.pop(0))
        command = sub
    return command, " ".join(path), rest


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "commands"], ids=_id)
def test_commands_example_names_real_commands_and_options(example):
    lines = gfxgate_lines(example.text)
    assert lines, f"{example.where}: no gfxgate command in the block"
    for words in lines:
        command, name, rest = _command(words)
        options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        options |= {"--help"}
        for word in rest:
            flag = word.split("=", 1)[0]
            if re.fullmatch(r"--[a-z][a-z0-9-]*|-[a-zA-Z]", flag):
                assert flag in options, f"{example.where}: `{name}` has no option {flag} (has {sorted(options)})"


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "ci"], ids=_id)
def test_ci_example_is_what_ci_runs(example):
    (command,) = example.lines()
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "yaml"], ids=_id)
def test_yaml_example_parses(example):
    import yaml

    assert yaml.safe_load(example.text)


@pytest.mark.parametrize("example", [e for e in ALL if e.kind == "tested-by"], ids=_id)
def test_tested_by_names_a_test_that_reads_the_page(example):
    (path,) = example.args
    assert (ROOT / path).read_text(encoding="utf-8").count(example.page.as_posix()) >= 1, (
        f"{example.where}: {path} does not read {example.page}"
    )


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short_and_shows_the_terminal_sample():
    """The way in: at most 200 lines, and the one command's real output (samples/gfx900.txt, what a terminal of 80
    columns shows), the answer near its top."""
    readme = _readme()
    assert len(readme.splitlines()) <= 200
    sample = next(e for e in examples("README.md") if e.kind == "file" and e.args == ("samples/gfx900.txt",))
    shown = sample.text.splitlines()
    assert max(len(line) for line in shown) <= 80
    assert next(i for i, line in enumerate(shown) if line.startswith("The answer for gfx900")) < 15


def test_readme_commands_table_names_every_command():
    from gfxgate.cli import COMMANDS

    readme = _readme()
    table = readme[readme.index("## Commands") : readme.index("## Exit codes")]
    for name in COMMANDS:
        assert f"`gfxgate {name}" in table or f"`{name}`" in table, name


def test_docs_index_links_every_command_page():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs" / "commands").glob("*.md")):
        assert f"](commands/{page.name})" in index, page.name
    for page in PENDING_PAGES:
        assert f"]({page.removeprefix('docs/')})" in index, page


def test_docs_list_every_matcher():
    """docs/evidence.md's paragraph of matchers names each registered matcher (gfxgate/matchers/, one module each)
    once."""
    from gfxgate.matchers import MATCHERS

    text = (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8")
    start = text.index("Matchers, one module each under `gfxgate/matchers/`:")
    paragraph = text[start : text.index("\n\n", start)]
    named = re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", paragraph)
    assert len(named) == len(set(named)), named
    assert sorted(named) == sorted(MATCHERS)


def test_readme_h200_excerpts_match_the_sample():
    """The real-GPU tables (benchmarks/README.md, the study's protocol on an H200) are rows of
    samples/h200/sweep-report.md (generated from the committed worklog)."""
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    sample = (ROOT / "samples" / "h200" / "sweep-report.md").read_text(encoding="utf-8").splitlines()
    for start, end, count in (
        ("<!-- excerpt of samples/h200/sweep-report.md (Results)", "<!-- end of h200 excerpt -->", 9),
        ("<!-- excerpt of samples/h200/sweep-report.md (speed)", "<!-- end of h200 speed excerpt -->", 9),
    ):
        begin = readme.index(start)
        rows = [line for line in readme[begin : readme.index(end, begin)].splitlines()[1:] if line.startswith("|")]
        assert len(rows) == count  # header, separator, seven num_gpu values
        for row in rows:
            assert row in sample, f"README h200 row is stale: {row[:60]}"
