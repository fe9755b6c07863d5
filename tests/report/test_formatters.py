"""One formatter interface: every module that renders a result exposes ``render(result, fmt, **options)``, the one
entry its command calls, and does no I/O (a formatter takes a result and returns text)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gfxgate"
MODULES = [
    "gfxgate.report",
    "gfxgate.report.workarounds",
    "gfxgate.report.messages",
    *(f"gfxgate.{p.parent.name}.render" for p in sorted(PACKAGE.glob("*/render.py"))),
]
# what I/O looks like in source: opening or writing files, printing, click, the standard streams, subprocesses
IO = re.compile(r"\bopen\(|\bprint\(|\bclick\b|sys\.std(?:out|err|in)|\.write_(?:text|bytes)\(|\bsubprocess\b|\bemit\(")


def test_the_list_holds_every_render_module():
    assert len(MODULES) >= 10 and "gfxgate.sweep.render" in MODULES and "gfxgate.prcheck.render" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_module_has_one_render_entry(name):
    render = importlib.import_module(name).render
    params = list(inspect.signature(render).parameters.values())
    assert [p.name for p in params[1:2]] == ["fmt"], f"{name}.render{inspect.signature(render)}: (result, fmt, ...)"
    assert all(p.kind is p.KEYWORD_ONLY or p.default is not p.empty for p in params[2:]), (
        f"{name}.render: options after (result, fmt) have defaults or are keyword-only"
    )


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_module_does_no_io(name):
    module = importlib.import_module(name)
    source = Path(module.__file__).read_text(encoding="utf-8")
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    assert not IO.findall(code), f"{name}: {sorted(set(IO.findall(code)))}"


# -- one format enum, one formatter shape (issue 25 item 6) ---------------------------------------------------------
# the command whose --format each formatter module serves (its words after `gfxgate`)
COMMAND_OF = {
    "gfxgate.report": ["scan"],
    "gfxgate.report.workarounds": ["workarounds"],
    "gfxgate.report.messages": ["messages"],
    "gfxgate.artifacts.render": ["artifacts"],
    "gfxgate.diagnose.render": ["diagnose"],
    "gfxgate.doctor.render": ["doctor"],
    "gfxgate.history.render": ["history"],
    "gfxgate.prcheck.render": ["diff", "check"],
    "gfxgate.sweep.render": ["sweep report"],
    "gfxgate.timeline.render": ["timeline"],
    "gfxgate.trace.render": ["trace"],
    "gfxgate.fleet.render": ["fleet report"],
}


def test_every_formatter_module_names_its_command():
    assert set(COMMAND_OF) == set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_module_offers_md_json_and_text_of_the_one_format_enum(name):
    from gfxgate.report.formats import RESULT_FORMATS, Format

    formats = importlib.import_module(name).FORMATS
    assert isinstance(formats, tuple) and all(type(f) is Format for f in formats), f"{name}.FORMATS: {formats!r}"
    assert set(RESULT_FORMATS) <= set(formats) and len(set(formats)) == len(formats), name


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_refuses_a_format_its_result_does_not_offer(name):
    """No silent fall back (workarounds, messages, history and the diff rendered Markdown for any other name)."""
    from gfxgate.report.formats import Format

    module = importlib.import_module(name)
    required = {
        p.name: None
        for p in inspect.signature(module.render).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    }
    for fmt in [*(f for f in Format if f not in module.FORMATS), "bogus", "MD", "markdown"]:
        with pytest.raises(ValueError, match="unknown format"):
            module.render(None, fmt, **required)


@pytest.mark.parametrize("name", MODULES)
def test_a_commands_format_choices_are_its_formatters(name):
    from tests.test_formats_everywhere import _command

    for words in COMMAND_OF[name]:
        option = next(p for p in _command(words).params if p.name == "fmt")
        assert set(option.type.choices) == {f.value for f in importlib.import_module(name).FORMATS}, words


def test_a_formatters_table_is_typed_by_the_one_protocol():
    """Where a module keeps a table of formatters, it is keyed by the one enum and covers its FORMATS."""
    from gfxgate.report.formats import Format

    tables = 0
    for name in MODULES:
        module = importlib.import_module(name)
        table = getattr(module, "FORMATTERS", None)
        if table is None:
            continue
        tables += 1
        assert all(type(key) is Format for key in table) and set(table) == set(module.FORMATS), name
        assert all(callable(f) for f in table.values()), name
    assert tables >= 5


def test_there_is_one_format_enum():
    """No module but report/formats.py spells a format as an enum member of its own (``MD = "md"``)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).as_posix() == "report/formats.py":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r'^\s+[A-Z_]+\s*=\s*"(?:md|json|text|sarif)"\s*$', line):
                found.append(f"{path.relative_to(PACKAGE)}: {line.strip()}")
    assert not found, found
