"""One set of formats everywhere (issue 29): every command that prints a result takes --format md|json|text with
the same meaning, and defaults to text only on a terminal."""

from __future__ import annotations

import json
import os
import re

import click
import pytest

from gfxgate.cli import COMMANDS

# every command that prints a result, as its words after `gfxgate`; the others build or print fixed data
RESULT_COMMANDS = [
    "scan",
    "doctor",
    "artifacts",
    "trace",
    "diff",
    "history",
    "check",
    "workarounds",
    "timeline",
    "diagnose",
    "messages",
    "targets",
    "sweep report",
    "fleet report",
]
NOT_RESULTS = {"snapshot", "schema", "samples", "pins", "sweep"}  # builders, a schema printer, a group


def _command(words: str) -> click.Command:
    import importlib

    first, *rest = words.split()
    module, attr, _ = COMMANDS[first]
    command = getattr(importlib.import_module(module), attr)
    for word in rest:
        command = command.commands[word]
    return command


def test_the_lists_cover_every_command():
    assert {w.split()[0] for w in RESULT_COMMANDS} | NOT_RESULTS == set(COMMANDS)


@pytest.mark.parametrize("words", RESULT_COMMANDS)
def test_every_result_command_offers_md_json_and_text(words):
    option = next(p for p in _command(words).params if p.name == "fmt")
    assert {"md", "json", "text"} <= set(option.type.choices), words
    assert option.envvar == "GFXGATE_FORMAT"


def _run(exe, *args, env=None):
    return exe(*args, timeout=120, env={**os.environ, "COLUMNS": "80", **(env or {})})


SAMPLE_LOG = str(
    __import__("pathlib").Path(__file__).resolve().parents[1]
    / "samples"
    / "logs"
    / "ollama-0.12.3-override-rocblas.log"
)


@pytest.mark.parametrize(
    "args",
    [
        ["diagnose", SAMPLE_LOG, "--no-upstream"],
        ["timeline", "-t", "gfx900"],
        ["targets", "gfx1031"],
        ["targets"],
        ["scan", "-t", "gfx1031"],
    ],
)
def test_the_three_formats_of_one_result_agree(gfxgate_cli, args):
    outs = {fmt: _run(gfxgate_cli, *args, "--format", fmt) for fmt in ("md", "json", "text")}
    for fmt, done in outs.items():
        assert done.returncode in (0, 5), (fmt, done.stderr)
    data = json.loads(outs["json"].stdout)
    assert {"schema_version", "kind", "generator"} <= set(data), list(data)[:5]  # as every gfxgate JSON document
    assert outs["md"].stdout.lstrip().startswith(("#", "|"))
    text = outs["text"].stdout
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text) and "|---" not in text
    # the text shows what the Markdown shows: the first table row's first cell is in both
    md_lines = outs["md"].stdout.splitlines()
    rule = next((i for i, line in enumerate(md_lines) if line.startswith("|---")), None)
    first_row = md_lines[rule + 1] if rule is not None and rule + 1 < len(md_lines) else None
    if first_row is not None:
        cell = first_row.split("|")[1].strip().strip("`*")
        assert cell[:12] in text, (cell, text[:400])
    # the default, piped, is Markdown (targets: text, as before)
    assert _run(gfxgate_cli, *args).stdout == outs["text" if args[0] == "targets" else "md"].stdout


def test_targets_default_piped_stays_text(gfxgate_cli):
    assert _run(gfxgate_cli, "targets", "gfx900").stdout.startswith("target ")


def test_an_explained_target_says_what_its_hsa_version_means(gfxgate_cli):
    out = _run(gfxgate_cli, "targets", "gfx1031").stdout
    assert re.search(r"^HSA version\s+10\.3\.1$", out, re.M)
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.1 makes another GPU report as gfx1031" in out
    assert "hsa_override_gfx_version" not in out
    assert (
        json.loads(_run(gfxgate_cli, "targets", "gfx1031", "--format", "json").stdout)["hsa_override_gfx_version"]
        == "10.3.1"
    )


def test_top_level_help_says_pins_is_show_and_bump(gfxgate_cli):
    line = next(line for line in _run(gfxgate_cli, "--help").stdout.splitlines() if line.strip().startswith("pins"))
    assert "Show the upstream pins" in line and "bump one" in line
