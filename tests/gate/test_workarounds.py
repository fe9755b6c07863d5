"""`gfxgate workarounds`: entries checked across tags where a variable is read, moved, and removed."""

from __future__ import annotations

import json

import pytest

from gfxgate.cli import main
from gfxgate.errors import RuleError
from gfxgate.resources import rules_dir
from gfxgate.gate.ruleset import default_rules
from gfxgate.gate.workarounds import default_workarounds, load
from tests.upstream_fixtures import commit_tree, new_repo

CONFIG_GO = """package envconfig

var (
	// HsaOverrideGfxVersion overrides the gfx version reported by the runtime
	HsaOverrideGfxVersion = String("HSA_OVERRIDE_GFX_VERSION")
)
"""

AMD_GO = """package discover

import "os"

func gfxOverride() string {
	return os.Getenv("HSA_OVERRIDE_GFX_VERSION")
}
"""


@pytest.fixture
def env_repo(tmp_path, monkeypatch, upstream):
    """Tags: v1.0.0 reads the variable in envconfig, v1.1.0 moved it to discover/, v1.2.0 removed it."""
    repo = new_repo(tmp_path / "ollama")
    docs = 'Set `HSA_OVERRIDE_GFX_VERSION="10.3.0"` for RDNA2 cards ROCm does not list.\n'
    commit_tree(
        repo,
        {
            "docs/gpu.md": docs,
            "envconfig/config.go": CONFIG_GO,
            "Dockerfile": "RUN rm -f dist/lib/ollama/rocm/rocblas/library/*gfx90[06]*\n",
        },
        "read",
        tag="v1.0.0",
    )
    commit_tree(repo, {"envconfig/config.go": None, "discover/amd.go": "// moved\n\n" + AMD_GO}, "moved", tag="v1.1.0")
    commit_tree(repo, {"discover/amd.go": None, "Dockerfile": "FROM scratch\n"}, "removed", tag="v1.2.0")
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(tmp_path / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(upstream / "rocm"))
    return tmp_path / "ollama"


def _wheres(entry: dict) -> list[str]:
    return [e["where"] for c in entry["checks"] for e in c["evidence"]]


def _states(capsys, ref: str) -> dict:
    with pytest.raises(SystemExit) as info:
        main(["workarounds", "--format", "json", "--ref", f"ollama={ref}", "--offline"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    return {w["id"]: w for w in json.loads(out)["workarounds"]}


def test_variable_read_moved_and_removed(env_repo, capsys):
    first = _states(capsys, "v1.0.0")["hsa-override-9.0.0"]
    assert first["state"] == "live"
    assert "ollama@v1.0.0:envconfig/config.go:5" in _wheres(first)
    assert "ollama@v1.0.0:docs/gpu.md:1" in _wheres(first)
    moved = _states(capsys, "v1.1.0")["hsa-override-9.0.0"]
    assert moved["state"] == "live"
    assert "ollama@v1.1.0:discover/amd.go:8" in _wheres(moved)
    gone = _states(capsys, "v1.2.0")
    assert gone["hsa-override-9.0.0"]["state"] == "stale"
    assert gone["hsa-override-9.0.0"]["summary"].startswith("stale at ollama@v1.2.0")
    assert gone["copy-rocblas-tensile"]["state"] == "stale"  # the Dockerfile no longer deletes the files
    # stale entries are reported, never dropped: every entry that exists at v1.2.0 (exists_in) is there
    assert sorted(gone) == sorted(
        w.id
        for w in default_workarounds()  # the Linux release's (the default --os)
        if w.exists_at({"ollama": "v1.2.0"}.get) and "linux" in w.os
    )


def test_override_names_the_target_it_selects(env_repo, capsys):
    states = _states(capsys, "v1.0.0")
    assert states["hsa-override-10.3.0"]["override_target"] == "gfx1030"
    assert states["hsa-override-9.0.0"]["override_target"] == "gfx900"


def test_shipped_matrix_has_at_least_15_entries_with_citations():
    items = default_workarounds()
    assert len(items) >= 15
    assert all(w.checks and w.risk and w.what and w.addresses for w in items)
    assert {"HSA_OVERRIDE_GFX_VERSION=9.0.0", "HSA_ENABLE_SDMA=0"} <= {w.setting for w in items}


def test_bad_entries_are_rejected(tmp_path):
    path = tmp_path / "w.yaml"
    text = (rules_dir() / "workarounds.yaml").read_text()
    path.write_text(text.replace("applies_to: [gfx902, gfx904, gfx909, gfx90c]", "applies_to: [gfx902, gfx9999]"))
    with pytest.raises(RuleError, match="unknown target 'gfx9999'"):
        load(path, layers=None, repos=None)
    path.write_text(text.replace('override: "10.3.0"', 'override: "10.3"'))
    with pytest.raises(RuleError, match="override"):
        load(path)
    path.write_text(text.replace("unblocks: [runtime]", "unblocks: [runtiem]", 1))
    with pytest.raises(RuleError, match="unknown layer 'runtiem'"):
        load(path, layers={l.id for l in default_rules().layers})


def test_scan_links_cells_to_workarounds(capsys):
    with pytest.raises(SystemExit):
        main(["scan", "-t", "gfx900", "-t", "gfx1031", "--ref", "ollama=v0.17.5", "--format", "json"])  # the study's
    data = json.loads(capsys.readouterr().out)
    cells = {(l["id"], c["target"]): c for l in data["layers"] for c in l["cells"]}
    assert "build-amdgpu-targets" in cells[("cmake-filter", "gfx900")]["workarounds"]
    assert "copy-rocblas-tensile" in cells[("release-packaging", "gfx900")]["workarounds"]
    assert "hsa-override-10.3.0" in cells[("cmake-presets", "gfx1031")]["workarounds"]
    assert cells[("discovery", "gfx900")]["workarounds"] == []  # allowed cells need none


def test_a_workaround_that_does_not_exist_yet_is_named_not_checked():
    """`gfxgate workarounds` before RocmComputeMajorMin existed and after its removal: one line names the entry and
    where it exists."""
    from gfxgate.gate.workarounds import default_workarounds
    from gfxgate.report.workarounds import render_json, render_md

    item = next(w for w in default_workarounds() if w.id == "build-rocm-compute-major-min")
    assert item.exists_in is not None and not item.exists_at({"ollama": "v0.5.1"}.get)
    assert item.exists_at({"ollama": "v0.5.2-rc0"}.get) and item.exists_at({"ollama": "v0.12.3"}.get)
    assert not item.exists_at({"ollama": "v0.12.4-rc0"}.get) and not item.exists_at({"ollama": "v0.32.15"}.get)
    text = render_md([], sources=(), not_applicable=[item])
    assert f"`build-rocm-compute-major-min` exists in ollama {item.exists_in.versions} only" in text
    assert "RocmComputeMajorMin=8" not in text  # neither its setting nor a check
    assert json.loads(render_json([], sources=(), not_applicable=[item]))["not_applicable"] == [
        {"id": "build-rocm-compute-major-min", "exists_in": f"ollama {item.exists_in.versions}"}
    ]


def test_a_setting_with_a_pipe_stays_in_its_cell():
    """A setting is shell text (`cmd a | cmd b` is plausible): in the matrix row its pipe must not split the cell."""
    import dataclasses

    from gfxgate.gate.workarounds import WorkaroundReport, default_workarounds
    from gfxgate.report.workarounds import render_md
    from tests.prcheck.test_diff import gfm_cells

    w = dataclasses.replace(default_workarounds()[0], setting="ls /opt/rocm/lib | grep gfx900")
    text = render_md([WorkaroundReport(workaround=w, state="live", summary="found", results=())], sources=())
    row = next(line for line in text.splitlines() if "grep gfx900" in line)
    assert gfm_cells(row) == ["`ls /opt/rocm/lib | grep gfx900`", ", ".join(w.unblocks) or "—", "**live**", "found"]


def test_the_igpu_switch_is_linked_for_integrated_gpus_only(gfxgate_cli):
    """issue 29: the Vulkan row of a discrete gfx1031 linked OLLAMA_IGPU_ENABLE=1, which only keeps integrated GPUs;
    `integrated_only: true` limits it to the targets rules/targets.yaml marks integrated."""
    import json

    done = gfxgate_cli("scan", "-t", "gfx1031,gfx1103", "--format", "json", check=True, timeout=60)
    linked = {
        (layer["id"], cell["target"])
        for layer in json.loads(done.stdout)["layers"]
        for cell in layer["cells"]
        if "ollama-igpu-enable" in cell.get("workarounds", [])
    }
    assert ("vulkan", "gfx1031") not in linked
    assert ("vulkan", "gfx1103") in linked
    from gfxgate.gate.workarounds import default_workarounds
    from gfxgate.targets import catalog

    igpu = next(w for w in default_workarounds() if w.id == "ollama-igpu-enable")
    assert set(igpu.applies_to) == {p.name for p in catalog().by_name.values() if p.integrated}


@pytest.mark.parametrize(
    ("target", "listed", "left_out"),
    [
        ("gfx900", "copy-rocblas-tensile", "build-cuda-architectures"),
        ("sm_61", "build-cuda-architectures", "copy-rocblas-tensile"),
    ],
)
def test_a_workaround_is_listed_for_its_own_vendors_targets_only(capsys, target, listed, left_out):
    """`workarounds -t gfx900` listed the NVIDIA build flag with -DCMAKE_CUDA_ARCHITECTURES=900 (gfx900's number):
    a workaround belongs to the vendors of the layers it unblocks (rules/layers.yaml `vendors:`)."""
    with pytest.raises(SystemExit) as info:
        main(["workarounds", "-t", target, "--offline", "--format", "json"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    ids = {entry["id"] for entry in json.loads(out)["workarounds"]}
    assert listed in ids
    assert left_out not in ids
