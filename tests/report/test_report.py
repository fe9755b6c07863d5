"""Formatters and the CLI's error handling, on constructed matrices and real scans."""

from __future__ import annotations

import pytest

from gfxgate.cli import main
from gfxgate.gate.matrix import GateMatrix, Layer
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.report import FORMATS, FORMATTERS, render


def _matrix() -> GateMatrix:
    layer = Layer("cmake-filter", "CMake target filter", "source", "Does the filter keep it?")
    loc = Location(repo="ollama", ref="v0.17.5", commit="0" * 40, path="CMakeLists.txt", line=127)
    ev = Evidence("rule-a", loc, 'list(FILTER AMDGPU_TARGETS INCLUDE REGEX "^gfx(1030|1100)$")', "drops gfx900")
    cells = {
        ("cmake-filter", "gfx900"): Verdict(
            "cmake-filter",
            "gfx900",
            Status.OVERRIDE_REQUIRED,
            "blocked | by default",
            (ev,),
            remedy="-DAMDGPU_TARGETS=gfx900",
        ),
        ("cmake-filter", "gfx1030"): Verdict(
            "cmake-filter", "gfx1030", Status.UNKNOWN, "unknown", reason="rule did not match"
        ),
    }
    return GateMatrix(("gfx900", "gfx1030"), (layer,), cells)


def test_every_format_has_a_formatter():
    assert set(FORMATTERS) == set(FORMATS)


def test_markdown_escapes_table_cells_and_keeps_evidence():
    text = render(_matrix(), "md")
    row = next(line for line in text.splitlines() if line.startswith("| CMake target filter"))
    assert "blocked \\| by default" in row and row.count(" | ") == 3
    assert "`ollama@v0.17.5:CMakeLists.txt:127`" in text
    assert "Remedy: -DAMDGPU_TARGETS=gfx900" in text
    assert "Why: rule did not match" in text


def test_text_and_json_carry_the_same_cells():
    import json

    data = json.loads(render(_matrix(), "json"))
    statuses = [c["status"] for c in data["layers"][0]["cells"]]
    assert statuses == ["override-required", "unknown"]
    assert "ollama@v0.17.5:CMakeLists.txt:127" in render(_matrix(), "text", verbose=True)
    assert "ollama@v0.17.5:CMakeLists.txt:127" not in render(_matrix(), "text")  # evidence folded behind -v


def test_verdict_without_evidence_is_refused():
    with pytest.raises(ValueError, match="without evidence"):
        Verdict("x", "gfx900", Status.ALLOWED, "ok")
    with pytest.raises(ValueError, match="without a reason"):
        Verdict("x", "gfx900", Status.UNKNOWN, "?")


def test_ctrl_c_exits_130(monkeypatch, capsys):
    import gfxgate.gate.scan

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gfxgate.gate.scan, "gate_facts", interrupted)
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900"])
    assert info.value.code == 130 and "interrupted" in capsys.readouterr().err


def test_output_file_is_written_whole(tmp_path, capsys):
    out = tmp_path / "m.md"
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "-o", str(out)])
    assert info.value.code == 0
    assert out.read_text().startswith("# gfxgate gate matrix: gfx900")
    assert not list(tmp_path.glob(".*.tmp"))


def test_python_dash_m_and_help_are_fast_and_lazy():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "gfxgate", "--help"], capture_output=True, text=True, check=True).stdout
    assert "scan" in out and "targets" in out
    probe = "import sys; from gfxgate.cli import cli; print('jinja2' in sys.modules, 'tree_sitter' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split() == [
        "False",
        "False",
    ]


def test_cli_needs_no_module_imported_by_someone_else():
    """A console script starts with a bare interpreter: nothing may rely on importlib.util being pre-imported."""
    import subprocess
    import sys

    probe = (
        "import sys, importlib; sys.modules.pop('importlib.util', None); "
        "importlib.__dict__.pop('util', None); from gfxgate.cli import main; main(['targets', 'gfx900'])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Vega 10" in out.stdout
