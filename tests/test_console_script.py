"""The console script's entry (``gfxgate.cli:run``): main, with the collector set for a short process."""

from __future__ import annotations

import gc
import sys

import pytest

from gfxgate import cli


def test_the_console_script_is_run(tmp_path):
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["gfxgate"] == "gfxgate.cli:run"


def test_run_sets_the_threshold_calls_main_and_freezes_at_exit_even_on_an_error(monkeypatch):
    calls: list[tuple] = []
    monkeypatch.setattr(gc, "set_threshold", lambda *a: calls.append(("threshold", a)))
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(("freeze",)))

    def failing_main():
        calls.append(("main",))
        sys.exit(3)

    monkeypatch.setattr(cli, "main", failing_main)
    with pytest.raises(SystemExit) as exit_info:
        cli.run()
    assert exit_info.value.code == 3
    assert [c[0] for c in calls] == ["threshold", "main", "freeze"]
    assert calls[0][1][0] == cli.GC_GEN0 and calls[0][1][1:] == gc.get_threshold()[1:]
