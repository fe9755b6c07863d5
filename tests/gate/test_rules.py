"""Rule files: schema errors with file:line, cross-checks at load, and the shipped data's health."""

from __future__ import annotations

import json
import shutil

import pytest

from gfxgate.errors import RuleError
from gfxgate.resources import rules_dir
from gfxgate.gate.ruleset import default_rules, load_rules
from gfxgate.cli import main


@pytest.fixture
def rules_copy(tmp_path):
    root = tmp_path / "rules"
    shutil.copytree(rules_dir(), root)
    return root


def test_shipped_rules_load_and_cover_every_source_layer():
    rules = default_rules()
    source_layers = {layer.id for layer in rules.layers if layer.kind == "source"}
    assert source_layers == {r.layer for r in rules.rules}
    assert len({r.id for r in rules.rules}) == len(rules.rules)


def test_broken_yaml_names_file_and_line(rules_copy):
    path = rules_copy / "gates" / "cmake-filter.yaml"
    path.write_text(path.read_text().replace("matcher: cmake-list-filter", "matcher: [cmake-list-filter"))
    with pytest.raises(RuleError) as info:
        load_rules(rules_copy)
    assert f"{path}:" in str(info.value) and "invalid YAML" in str(info.value)


def test_schema_error_names_file_and_line(rules_copy):
    path = rules_copy / "gates" / "cmake-presets.yaml"
    text = path.read_text().replace(
        "matcher: json-target-list\n    params:\n      variable: AMDGPU_TARGETS\n      presets:",
        "matcher: json-target-list\n    params:\n      varible: AMDGPU_TARGETS\n      presets:",
        1,
    )
    path.write_text(text)
    with pytest.raises(RuleError) as info:
        load_rules(rules_copy)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "params:" in l)
    assert f"{path}:{line}:" in str(info.value) and "variable" in str(info.value)


def test_pass_through_rule_needs_exactly_one_default_list(rules_copy):
    """preset-passthrough reads the default list from a presets file or from a command line, not both, not neither."""
    path = rules_copy / "gates" / "cmake-filter.yaml"
    text = path.read_text()
    lines = text.splitlines()
    rule = next(i for i, l in enumerate(lines) if "id: ollama-llama-server-dockerfile-list" in l)
    line = next(i for i, l in enumerate(lines[rule:], rule + 1) if l.strip() == "params:")
    both = text.replace(
        "      list_label:",
        "      presets_file: llama/server/CMakePresets.json\n      presets: rocm\n      list_label:",
        1,
    )
    neither = "\n".join(l for l in text.splitlines() if "list_pattern:" not in l) + "\n"
    for broken in (both, neither):
        path.write_text(broken)
        with pytest.raises(RuleError) as info:
            load_rules(rules_copy)
        assert str(info.value).startswith(f"{path}:{line}: rules/1/params")


def test_unknown_matcher_and_layer_are_rejected(rules_copy):
    path = rules_copy / "gates" / "official-matrix.yaml"
    path.write_text(path.read_text().replace("layer: official-matrix", "layer: offical-matrix"))
    with pytest.raises(RuleError, match="unknown layer 'offical-matrix'"):
        load_rules(rules_copy)


def test_paths_never_escape_the_source_root(rules_copy):
    path = rules_copy / "gates" / "cmake-filter.yaml"
    path.write_text(path.read_text().replace("paths: [CMakeLists.txt]", "paths: [../../etc/passwd]"))
    with pytest.raises(RuleError, match="escapes the source root"):
        load_rules(rules_copy)


def test_yaml_tags_are_not_executed(rules_copy):
    path = rules_copy / "gates" / "cmake-filter.yaml"
    path.write_text(
        path.read_text().replace("title: Ollama", "title: !!python/object/apply:os.system ['true']\n    x: Ollama")
    )
    with pytest.raises(RuleError, match="invalid YAML"):
        load_rules(rules_copy)


def test_cli_reports_rule_errors_with_exit_3(rules_copy, capsys):
    (rules_copy / "layers.yaml").write_text("layers: [{id: x}]\n")
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "--rules", str(rules_copy)])
    assert info.value.code == 3
    assert "layers.yaml:1" in capsys.readouterr().err


def test_shipped_snapshot_is_current():
    """Every rule has facts in the embedded snapshot, made from its current definition and the current pins."""
    from gfxgate.gate import snapshot
    from gfxgate.sources.resolve import load_pins

    snap = snapshot.load()
    usable, notes = snap.usable_facts(default_rules(), load_pins())
    assert notes == []
    assert set(usable) == {r.id for r in default_rules().rules}


def test_samples_are_not_stale(capsys):
    from gfxgate.app.samples import SAMPLE_TARGETS, TIMELINES, render_samples

    folder = rules_dir().parent / "samples"
    expected = render_samples()
    matrices = {
        f"{prefix}{t}.{ext}" for prefix in ("", "study/") for t in SAMPLE_TARGETS for ext in ("md", "json", "txt")
    }
    timelines = {f"{name}.{ext}" for name in TIMELINES for ext in ("md", "svg")}  # one per vendor (and per OS)
    assert set(expected) == matrices | timelines  # today's release, and the study's beside it
    for name, text in expected.items():
        assert (folder / name).read_text(encoding="utf-8") == text, f"samples/{name} is stale: run `gfxgate samples`"


def test_h200_samples_are_not_stale_and_come_from_the_committed_worklog(tmp_path):
    """samples/h200/ (issue 27): the sweep report and diagnose samples are generated from the H200 worklog and
    trimmed logs committed beside them; --check sees a stale one, and one that no input explains."""
    import shutil

    from gfxgate.app.samples import H200, H200_DIAGNOSED, render_h200

    folder = rules_dir().parent / "samples"
    expected = render_h200(folder)
    assert set(expected) == (
        {f"{H200}/sweep-report.md", f"{H200}/sweep-report.json", f"{H200}/soak-report.md", f"{H200}/soak-report.json"}
        | {f"{H200}/diagnose-{r}.md" for r in H200_DIAGNOSED}
    )
    for name, text in expected.items():
        assert (folder / name).read_text(encoding="utf-8") == text, f"samples/{name} is stale: run `gfxgate samples`"
    md = expected[f"{H200}/sweep-report.md"]
    assert "- Worklog: `samples/h200/sweep.jsonl.zst`" in md and "sm_90 (NVIDIA Hopper, compute capability 9.0)" in md
    assert "cuda = CUDA0 (NVIDIA H200); vulkan = Vulkan0 (NVIDIA H200)" in md
    # every cell of both backends ran at least five times (issue 27), and the soak ran one cell for ten minutes
    report = json.loads(expected[f"{H200}/sweep-report.json"])
    assert len(report["cells"]) == 14 and all(cell["passes"] == cell["total"] >= 5 for cell in report["cells"])
    soak = json.loads(expected[f"{H200}/soak-report.json"])
    assert [(c["endpoint"], c["num_gpu"]) for c in soak["cells"]] == [("vulkan", -1)]
    assert soak["span"]["seconds"] >= 600 and soak["cells"][0]["passes"] == soak["cells"][0]["total"] == 307
    # a copy with one run less in the worklog: its report differs, so --check must call the committed one stale
    copy = tmp_path / "samples"
    shutil.copytree(folder, copy)
    import zstandard

    packed = copy / H200 / "sweep.jsonl.zst"
    lines = zstandard.ZstdDecompressor().decompressobj().decompress(packed.read_bytes()).splitlines(keepends=True)
    packed.write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines[:-1])))
    assert render_h200(copy)[f"{H200}/sweep-report.md"] != (copy / H200 / "sweep-report.md").read_text(encoding="utf-8")


def test_default_scan_works_offline_from_snapshot(capsys, monkeypatch):
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "none")
    with pytest.raises(SystemExit) as info:
        main(["scan", "--target", "gfx900", "--format", "json"])
    assert info.value.code == 0
    data = json.loads(capsys.readouterr().out)
    cmake = next(l for l in data["layers"] if l["id"] == "cmake-filter")["cells"][0]
    assert cmake["status"] == "override-required"
    from gfxgate.sources.resolve import load_pins

    newest = (
        load_pins().sources["ollama"].ref
    )  # today's release (tests/gate/test_release_reproductions.py holds it to the timeline)
    assert cmake["evidence"][0]["where"].startswith(f"ollama@{newest}:")


def test_schema_command_prints_matrix_schema(capsys):
    with pytest.raises(SystemExit):
        main(["schema"])
    assert json.loads(capsys.readouterr().out)["properties"]["kind"]["const"] == "gate-matrix"
