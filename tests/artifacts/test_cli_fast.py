"""``gfxgate artifacts`` without click (gfxgate.cli.fast): the same parameters as click for every line it takes,
click for every other line, and the same bytes out of the console script either way."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from gfxgate.cli.artifacts import artifacts as command
from gfxgate.cli.fast import FORMAT_ENV, FORMATS, JOBS, fast_command, parse_artifacts


def _click_params(words: list[str]) -> dict | None:
    try:
        with command.make_context("artifacts", list(words)) as ctx:
            return dict(ctx.params)
    except click.exceptions.Exit:  # --help
        return None
    except click.ClickException:
        return None


def _vocabulary(tmp_path: Path) -> list[list[str]]:
    """Words of artifacts command lines, good and bad, each a unit (an option with its value, or one word)."""
    (tmp_path / "lib.so").write_bytes(b"\x7fELF")
    (tmp_path / "dir").mkdir()
    return [
        ["lib.so"], ["dir"], ["absent.so"], [""], ["-"], ["--"], ["-h"], ["--help"], ["--bogus"],
        ["-t", "gfx900"], ["--target", "gfx906,gfx1030"], ["--target=gfx900:xnack-"], ["-tgfx900"], ["-t=gfx900"],
        ["-t"], ["--target", "-j"],
        ["--kernels"], ["--kernels=1"], ["--sha256"],
        ["-j", "4"], ["-j", "0"], ["-j", "65"], ["-j", "x"], ["-j", " 8"], ["--jobs=64"], ["--jobs", "-1"], ["-j4"],
        ["--format", "json"], ["--format=text"], ["--format", "JSON"], ["--format", ""], ["--format"],
        ["-o", "out.json"], ["-o", "dir"], ["--output=lib.so"], ["-o", "-"], ["--output", ""],
    ]


def test_the_fast_parser_gives_what_click_gives_or_leaves_the_line_to_click(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    units = _vocabulary(tmp_path)
    taken = compared = accepted = 0
    for env in (None, "json", "bogus", ""):
        if env is None:
            monkeypatch.delenv(FORMAT_ENV, raising=False)
        else:
            monkeypatch.setenv(FORMAT_ENV, env)
        for n in range(4):
            for combo in itertools.product(units, repeat=n) if n < 3 else itertools.combinations(units, n):
                words = [w for unit in combo for w in unit]
                fast, slow = parse_artifacts(words), _click_params(words)
                compared += 1
                accepted += slow is not None
                if fast is not None:
                    taken += 1
                    assert slow == fast, words
    # not a parser that leaves everything to click: the vocabulary is mostly odd forms (-j4, -t=x, --, -), yet a
    # quarter of the lines click accepts are plain enough to be taken here
    assert compared > 30_000 and accepted > 10_000 and taken > accepted / 5, (compared, accepted, taken)


@pytest.mark.parametrize("words", [
    ["lib.so", "--format", "json"], ["--format=json", "lib.so"], ["-t", "gfx900", "lib.so", "-o", "out.md"],
    ["--kernels", "--sha256", "-j", "2", "lib.so", "dir"], [],
])
def test_the_usual_lines_run_without_click(words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _vocabulary(tmp_path)
    monkeypatch.delenv(FORMAT_ENV, raising=False)
    assert fast_command(["artifacts", *words]) is not None
    assert parse_artifacts(words) == _click_params(words)


def test_the_fast_parser_knows_exactly_the_click_commands_options():
    """A new option of the click command must be taught to the fast parser (until then it is an unknown word
    there, and click parses every line that uses it); a changed choice, range or default must be changed in both."""
    from gfxgate.cli import fast

    params = {p.name: p for p in command.params}
    assert set(params) == {"paths", *fast._FLAGS.values(), *fast._VALUES.values()}
    words = {o for p in command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}
    assert words == set(fast._FLAGS) | set(fast._VALUES)
    assert all(params[name].is_flag for name in fast._FLAGS.values())
    assert params["target_values"].multiple and not params["target_values"].is_flag
    assert tuple(params["fmt"].type.choices) == FORMATS and params["fmt"].default == "md"
    assert params["fmt"].envvar == FORMAT_ENV
    assert (params["jobs"].type.min, params["jobs"].type.max) == JOBS and params["jobs"].default is None
    assert params["output"].type.dir_okay is False and params["output"].type.readable
    assert params["paths"].nargs == -1 and params["paths"].type.readable and not params["paths"].type.exists


_RUN = """
import sys, atexit
atexit.register(lambda: sys.stderr.write("click imported: %s\\n" % ("click" in sys.modules)))
if sys.argv[1] == "click":
    import gfxgate.cli.fast
    gfxgate.cli.fast.fast_command = lambda args: None
from gfxgate.cli import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize("words", [
    ["k.hsaco", "--format", "json"], ["k.hsaco", "-t", "gfx900,gfx906", "--kernels"], ["--format=text", "."],
    ["k.hsaco", "-o", "out.json", "--format", "json"], ["absent.so"], ["k.hsaco", "-t", "gfx9999"],
])
def test_the_console_entry_writes_the_same_bytes_with_and_without_click(words, built, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / "k.hsaco").write_bytes(built.code_object("gfx900").read_bytes())
    runs = {}
    for how in ("fast", "click"):
        run = subprocess.run([sys.executable, "-c", _RUN, how, "artifacts", *words], cwd=work, capture_output=True,
                             env={k: v for k, v in os.environ.items() if k != FORMAT_ENV}, timeout=120)
        written = (work / "out.json").read_bytes() if (work / "out.json").exists() else None
        (work / "out.json").unlink(missing_ok=True)
        err, _, imported = run.stderr.decode().rstrip("\n").rpartition("\n")
        runs[how] = (run.returncode, run.stdout, err, written, imported)
    assert runs["fast"][:4] == runs["click"][:4]
    assert runs["fast"][4] == "click imported: False" and runs["click"][4] == "click imported: True"


@pytest.mark.parametrize("text", ["report", "report\n", "", "a\nb", "é ✓ 漢", "red \x1b[31mX\x1b[0m", "\x1b"])
@pytest.mark.parametrize("nl", [True, False])
@pytest.mark.parametrize("err", [True, False])
def test_echo_writes_what_click_echo_writes(text, nl, err, capsys):
    from gfxgate.cli.io import echo
    from gfxgate.report.text import inert

    echo(text, err=err, nl=nl)
    ours = capsys.readouterr()
    # a message line on stderr has its controls made visible first (issue 28: no escape reaches the terminal)
    click.echo("\n".join(map(inert, text.split("\n"))) if err else text, err=err, nl=nl)
    assert ours == capsys.readouterr()
