"""One formatter interface: every module that renders a result exposes ``render(result, fmt, **options)``, the one
entry its command calls, and does no I/O (a formatter takes a result and returns text)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gfxgate"
MODULES = ["gfxgate.report", "gfxgate.report.workarounds", "gfxgate.report.messages",
           *(f"gfxgate.{p.parent.name}.render" for p in sorted(PACKAGE.glob("*/render.py")))]
# what I/O looks like in source: opening or writing files, printing, click, the standard streams, subprocesses
IO = re.compile(r"\bopen\(|\bprint\(|\bclick\b|sys\.std(?:out|err|in)|\.write_(?:text|bytes)\(|\bsubprocess\b|\bemit\(")


def test_the_list_holds_every_render_module():
    assert len(MODULES) >= 10 and "gfxgate.sweep.render" in MODULES and "gfxgate.prcheck.render" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_module_has_one_render_entry(name):
    render = importlib.import_module(name).render
    params = list(inspect.signature(render).parameters.values())
    assert [p.name for p in params[1:2]] == ["fmt"], f"{name}.render{inspect.signature(render)}: (result, fmt, ...)"
    assert all(p.kind is p.KEYWORD_ONLY or p.default is not p.empty for p in params[2:]), \
        f"{name}.render: options after (result, fmt) have defaults or are keyword-only"


@pytest.mark.parametrize("name", MODULES)
def test_a_formatter_module_does_no_io(name):
    module = importlib.import_module(name)
    source = Path(module.__file__).read_text(encoding="utf-8")
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    assert not IO.findall(code), f"{name}: {sorted(set(IO.findall(code)))}"
