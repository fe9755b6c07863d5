"""Issue 24, reproductions 8, 9 and 11 (and item 7's gfx950/gfx1011 in the timeline), through the installed console
script. The ollama trees are real git repositories built from the annotated excerpts of tests/rules/ (the real
files' lines, annotations blanked); with ``GFXGATE_TEST_UPSTREAM`` the same questions go to the real clones."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories
from tests.upstream_fixtures import commit_tree, new_repo, repo_of_cases

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")


def _scan(exe: str, *args: str, env: dict | None = None) -> dict:
    run = exe("scan", "--format", "json", *args, timeout=300, env={**os.environ, "GFXGATE_OFFLINE": "1", **(env or {})})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)


def _cells(result: dict, layer: str) -> dict[str, dict]:
    return {c["target"]: c for lay in result["layers"] if lay["id"] == layer for c in lay["cells"]}


# -- reproduction 9: the release builds the preset its Dockerfile configures ---------------------------------------
def _assert_rocm7_only(cells: dict[str, dict], dockerfile_line: int | None) -> None:
    assert cells["gfx940"]["status"] == "blocked", cells["gfx940"]  # only the Windows preset 'ROCm 6' lists it
    assert cells["gfx941"]["status"] == "blocked"
    assert cells["gfx950"]["status"] == "allowed"  # 'ROCm 7' lists it
    for target in ("gfx940", "gfx950"):
        cited = [e for e in cells[target]["evidence"] if e["location"]["path"] == "Dockerfile"]
        assert [e["text"] for e in cited] == ["cmake --preset 'ROCm 7' \\"], cells[target]["evidence"]
        if dockerfile_line is not None:
            assert cited[0]["location"]["line"] == dockerfile_line
        assert "ROCm 7: the release configures it at Dockerfile:" in cells[target]["summary"]
        assert "ROCm 6" not in cells[target]["summary"]


def test_reproduction_9_release_build_reads_the_dockerfile_preset(gfxgate_cli, upstream, tmp_path):  # noqa: F811
    ollama = tmp_path / "ollama"
    repo_of_cases(ollama, {"v0.18.0": "ollama-cmake-presets-rocm/v0.18.0"})
    result = _scan(
        gfxgate_cli,
        "-t",
        "gfx940",
        "-t",
        "gfx941",
        "-t",
        "gfx950",
        "--ref",
        "ollama=v0.18.0",
        "--source",
        f"ollama={ollama}",
        "--source",
        f"rocm-docs={upstream / 'rocm'}",
        "--source",
        f"clr={upstream / 'clr'}",
    )
    _assert_rocm7_only(_cells(result, "cmake-presets"), dockerfile_line=None)


@pytest.mark.skipif(not UPSTREAM, reason="opt-in: GFXGATE_TEST_UPSTREAM=/path with the ollama and ROCm clones")
@pytest.mark.parametrize("tag,line", [("v0.18.0", 90), ("v0.24.0", 90)])
def test_reproduction_9_on_the_real_clone(gfxgate_cli, tag, line):
    root = Path(UPSTREAM)
    result = _scan(
        gfxgate_cli,
        "-t",
        "gfx940",
        "-t",
        "gfx941",
        "-t",
        "gfx950",
        "--ref",
        f"ollama={tag}",
        "--source",
        f"ollama={root / 'ollama'}",
        "--source",
        f"rocm-docs={root / 'ROCm'}",
        "--source",
        f"clr={root / 'clr'}",
    )
    _assert_rocm7_only(_cells(result, "cmake-presets"), dockerfile_line=line)


# -- reproduction 8: a build route needs a ROCm that can run code for the target -----------------------------------
V0121_DOCKERFILE = (  # ollama@v0.1.21:Dockerfile lines 43 and 112 (the ROCm 6 build stage, the runtime image)
    "FROM --platform=linux/amd64 rocm/dev-centos-7:6.0-complete AS rocm-6-build-amd64\n"
    "FROM --platform=linux/amd64 rocm/dev-centos-7:6.0-complete as runtime-amd64\n"
)


def _rocm_runtime(exe: str, ollama: Path, clr: Path, rocm_docs: Path, *targets: str) -> dict[str, dict]:
    args = [a for t in targets for a in ("-t", t)]
    result = _scan(
        exe,
        *args,
        "--ref",
        "ollama=v0.1.21",
        "--source",
        f"ollama={ollama}",
        "--source",
        f"rocm-docs={rocm_docs}",
        "--source",
        f"clr={clr}",
    )
    return _cells(result, "rocm-runtime")


def test_reproduction_8_rocm_6_0_cannot_run_gfx1200(gfxgate_cli, upstream, tmp_path):  # noqa: F811
    ollama = new_repo(tmp_path / "ollama")
    commit_tree(ollama, {"Dockerfile": V0121_DOCKERFILE}, "v0.1.21", tag="v0.1.21")
    cells = _rocm_runtime(gfxgate_cli, tmp_path / "ollama", upstream / "clr", upstream / "rocm", "gfx1200", "gfx1030")
    gfx1200 = cells["gfx1200"]
    assert gfx1200["status"] == "blocked", gfx1200
    assert "ROCm 6.0.0 cannot run code built for it" in gfx1200["summary"]
    [where] = {e["location"]["ref"] + ":" + e["text"] for e in gfx1200["evidence"]}
    assert where == "rocm-6.0.0:static constexpr Isa supportedIsas_[] = {"  # the release's ROCm, not the pin
    assert cells["gfx1030"]["status"] == "allowed"


def test_reproduction_8_no_rocm_route_where_the_releases_rocm_cannot_run_the_target(gfxgate_cli, upstream, tmp_path):  # noqa: F811
    """The answer, not only the row: at v0.1.21 (ROCm 6.0.0, whose HIP runtime has no gfx1200 row) no ROCm route is
    offered for gfx1200 ("ROCm: build" was), the refusal cites the rocm-runtime row; gfx1030 keeps its ROCm route."""
    import json as json_

    ollama = _v0121_with_rocm_targets(tmp_path)
    run = gfxgate_cli(
        "scan",
        "--format",
        "json",
        "-t",
        "gfx1200",
        "-t",
        "gfx1030",
        "--ref",
        "ollama=v0.1.21",
        "--source",
        f"ollama={ollama}",
        "--source",
        f"rocm-docs={upstream / 'rocm'}",
        "--source",
        f"clr={upstream / 'clr'}",
        timeout=300,
        env={**os.environ, "GFXGATE_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr
    routes = {r["target"]: r for r in json_.loads(run.stdout)["routes"]}
    rocm = next(b for b in routes["gfx1200"]["backends"] if b["backend"] == "rocm")
    assert rocm["option"] is None, rocm["option"]
    assert any("ROCm runtime of the release is blocked" in why for why in rocm["refused"]), rocm
    assert (routes["gfx1200"]["best"] or {}).get("backend") != "rocm"
    kept = next(b for b in routes["gfx1030"]["backends"] if b["backend"] == "rocm")
    assert kept["option"] is not None and kept["option"]["route"].startswith("rocm-"), kept


def _v0121_with_rocm_targets(tmp_path: Path) -> Path:
    """An ollama repository whose v0.1.21 builds ROCm 6.0.0 (the Dockerfile lines) with a user target list."""
    from tests.gate.rule_fixtures import FIXTURES, copy_case

    files = {"Dockerfile": V0121_DOCKERFILE}
    for case in ("ollama-gen-linux-amdgpu-targets/v0.3.0", "ollama-discovery-rocm-smi/v0.1.20"):  # a user list passes
        folder = tmp_path / case.replace("/", "-")
        copy_case(FIXTURES / case, folder)
        files |= {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in folder.rglob("*") if p.is_file()}
    ollama = new_repo(tmp_path / "ollama")
    commit_tree(ollama, files, "v0.1.21", tag="v0.1.21")
    return tmp_path / "ollama"


def test_reproduction_8_the_timeline_refuses_rocm_where_scan_does(gfxgate_cli, upstream, tmp_path):  # noqa: F811
    """`timeline --live` reads clr at the ROCm its release builds against, as the scan does: at v0.1.21 (ROCm 6.0.0)
    gfx1200 has no ROCm route ("ROCm: build" before), the rocm-runtime row is blocked at rocm-6.0.0, and the scan at
    the same release gives the same route; gfx1030 keeps its ROCm route in both."""
    ollama = _v0121_with_rocm_targets(tmp_path)
    sources = ["--source", f"ollama={ollama}", "--source", f"clr={upstream / 'clr'}"]
    run = gfxgate_cli(
        "timeline",
        "--live",
        "--offline",
        "--format",
        "json",
        "-t",
        "gfx1200",
        "-t",
        "gfx1030",
        *sources,
        timeout=300,
        env={**os.environ, "GFXGATE_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    rows = {t["target"]: t for t in json.loads(run.stdout)["targets"]}
    [cell] = rows["gfx1200"]["cells"]
    assert cell["route"] != "rocm-build" and not cell["route"].startswith("rocm"), cell["route"]
    assert cell["layers"]["rocm-runtime"] == "blocked", cell["layers"]
    rocm = next(b for b in cell["backends"] if b["backend"] == "rocm")
    assert rocm["state"] != "route" and "ROCm runtime of the release is blocked" in rocm["reason"], rocm
    assert any(e["where"].startswith("clr@rocm-6.0.0:rocclr/device/device.cpp:") for e in rocm["evidence"]), rocm[
        "evidence"
    ]
    [kept] = rows["gfx1030"]["cells"]
    assert kept["route"].startswith("rocm-"), kept["route"]
    assert kept["layers"]["rocm-runtime"] == "allowed"
    scan = _scan(
        gfxgate_cli,
        "-t",
        "gfx1200",
        "-t",
        "gfx1030",
        "--ref",
        "ollama=v0.1.21",
        *sources,
        "--source",
        f"rocm-docs={upstream / 'rocm'}",
    )
    for route in scan["routes"]:
        [timeline_cell] = rows[route["target"]]["cells"]
        assert (route["best"] or {}).get("route", "undecided") == timeline_cell["route"], route["target"]


def test_reproduction_8_the_embedded_timeline_offers_no_rocm_build_at_v0_1_21(gfxgate_cli, tmp_path):
    """The shipped snapshot (built with the real ollama and clr clones): gfx1200 and gfx1201 have no ROCm route while
    the release builds against ROCm 6.0 … 6.1.2 (clr's supportedIsas_ has no gfx1200/gfx1201 row there); it said
    "from v0.1.21 ROCm needs a source build"."""
    run = gfxgate_cli(
        "timeline", "--format", "json", "-t", "gfx1200", "-t", "gfx1201", timeout=120, env=_offline_env(tmp_path)
    )
    assert run.returncode == 0, run.stderr
    for row in json.loads(run.stdout)["targets"]:
        for tag in ("v0.1.21", "v0.3.0", "v0.5.12"):
            [cell] = [c for c in row["cells"] if _within(tag, c["from"], c["to"])]
            rocm = next(b for b in cell["backends"] if b["backend"] == "rocm")
            assert not cell["route"].startswith("rocm") and rocm["state"] != "route", (
                row["target"],
                tag,
                cell["route"],
            )
        text = gfxgate_cli(
            "timeline", "--format", "text", "-t", row["target"], timeout=120, env=_offline_env(tmp_path)
        ).stdout
        assert "from v0.1.21 ROCm needs a source build" not in text


@pytest.mark.parametrize("target", ["gfx1200", "gfx1201", "gfx950", "gfx1153"])
def test_reproduction_8_the_answer_cites_clr_for_the_releases_clr_refuses(gfxgate_cli, tmp_path, target):
    """The answer sentence cites each refusal with the releases it covers: up to v0.1.20 no build script compiles AMD
    code (gen_linux.sh), from v0.1.21 the release's ROCm 6.0.0 clr has no row for the target. It said "ROCm has no
    route up to v0.5.12" citing only ollama@v0.0.1:llm/generate/gen_linux.sh for all 115 releases."""
    env = _offline_env(tmp_path)
    run = gfxgate_cli("timeline", "--format", "json", "-t", target, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    [row] = json.loads(run.stdout)["targets"]
    assert "up to v0.1.20 (ollama@v0.0.1:llm/generate/gen_linux.sh)" in row["sentence"], row["sentence"]
    # from v0.1.21 the refusals cite, with the rest, the release's ROCm 6.0.0 clr (no row for the target); since the
    # bundled rocBLAS's target list is read too (issue 36), the first line of a range may be the Dockerfile's or the
    # rocBLAS allowlist's, and the ranges follow those refusals
    rocm = [c for c in row["clauses"] if c["backend"] == "rocm"]
    [early] = [c for c in rocm if c["tag"] == "v0.0.1"]
    late = [c for c in rocm if c["tag"] != "v0.0.1" and c["text"].startswith("ROCm has no route")]
    assert not any(e["where"].startswith("clr@") for e in early["evidence"]), early
    assert late and all(
        any(e["where"].startswith("clr@rocm-6.0.0:rocclr/device/device.cpp:") for e in c["evidence"]) for c in late
    ), late
    assert late[0]["text"].startswith("ROCm has no route v0.1.21–"), late
    md = gfxgate_cli("timeline", "--format", "md", "-t", target, timeout=120, env=env)
    assert md.returncode == 0, md.stderr
    [bullet] = [line for line in md.stdout.splitlines() if line.startswith("- ROCm has no route v0.1.21")]
    assert "`clr@rocm-6.0.0:rocclr/device/device.cpp:" in bullet.split(" — ")[1], bullet
    text = gfxgate_cli("timeline", "--format", "text", "-t", target, timeout=120, env=env)
    assert text.returncode == 0 and "clr@rocm-6.0.0:rocclr/device/device.cpp:" in text.stdout, text.stderr


def _within(tag: str, first: str, last: str) -> bool:
    from gfxgate.sources.versions import version_key

    return version_key(first) <= version_key(tag) <= version_key(last)


@pytest.mark.skipif(not UPSTREAM, reason="opt-in: GFXGATE_TEST_UPSTREAM=/path with the ollama, ROCm and clr clones")
def test_reproduction_8_on_the_real_clones(gfxgate_cli):
    root = Path(UPSTREAM)
    if not (root / "clr").is_dir():
        pytest.skip("no clr clone (ROCm/clr) in GFXGATE_TEST_UPSTREAM")
    cells = _rocm_runtime(gfxgate_cli, root / "ollama", root / "clr", root / "ROCm", "gfx1200", "gfx1201", "gfx1011")
    assert cells["gfx1200"]["status"] == cells["gfx1201"]["status"] == "blocked"
    assert cells["gfx1200"]["evidence"][0]["where"] == "clr@rocm-6.0.0:rocclr/device/device.cpp:95"
    assert cells["gfx1011"]["status"] == "allowed"


# -- reproduction 11: the default answers for today's release and names it; the study is one offline flag away ------
def _offline_env(tmp_path: Path) -> dict:
    """No source overrides, no network, an empty cache: only the embedded snapshots can answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_SOURCE_")}
    return {**env, "GFXGATE_OFFLINE": "1", "GIT_ALLOW_PROTOCOL": "none", "GFXGATE_CACHE_DIR": str(tmp_path / "cache")}


def _offline_scan(exe: str, tmp_path: Path, *args: str) -> dict:
    run = exe("scan", "--format", "json", *args, timeout=120, env=_offline_env(tmp_path))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _newest_release() -> str:
    from gfxgate.timeline import snapshot

    return snapshot.load().tags[-1]


def test_the_pin_is_the_newest_release_of_the_embedded_timeline():
    from gfxgate.sources.resolve import load_pins

    assert load_pins().sources["ollama"].ref == _newest_release()


def test_reproduction_11_the_default_scan_is_todays_release(gfxgate_cli, tmp_path):
    import datetime

    from gfxgate.gate import snapshot

    newest = _newest_release()
    result = _offline_scan(gfxgate_cli, tmp_path, "--target", "gfx900")
    (route,) = result["routes"]
    assert route["version"] == newest
    made = snapshot.load().released["ollama"]
    days = (datetime.date.today() - datetime.date.fromisoformat(made)).days
    note = next(n for n in result["notes"] if n.startswith("answers for ollama"))
    assert note.startswith(
        f"answers for ollama {newest}, the newest release in the embedded snapshot (its commit is of "
        f"{made}, {days} days before {datetime.date.today().isoformat()})"
    ), note
    assert "--ref ollama=v0.17.5 answers for pin set 'study'" in note
    # today's release turns Vulkan on by default: no OLLAMA_VULKAN=1 step is needed any more
    vulkan = _cells(result, "vulkan")["gfx900"]
    assert vulkan["status"] == "allowed" and "enabled by default" in vulkan["summary"]
    assert vulkan["evidence"][0]["where"].startswith(f"ollama@{newest}:discover/runner.go:")
    steps = [s["setting"] for b in route["backends"] if b["option"] for s in b["option"]["steps"]]
    assert "OLLAMA_VULKAN=1" not in steps and route["label"] == "Vulkan (default)"


def test_reproduction_11_the_study_is_one_offline_flag_away(gfxgate_cli, tmp_path):
    result = _offline_scan(gfxgate_cli, tmp_path, "--target", "gfx900", "--ref", "ollama=v0.17.5")
    (route,) = result["routes"]
    assert route["version"] == "v0.17.5" and route["label"] == "Vulkan: OLLAMA_VULKAN=1"
    assert {s["name"]: s["ref"] for s in result["sources"]}["ollama"] == "v0.17.5"
    assert any("from pin set 'study' of rules/pins.toml" in n for n in result["notes"])
    assert not (tmp_path / "cache" / "repos").exists()  # nothing was cloned: the embedded study snapshot answered


def test_the_study_snapshot_is_current():
    from gfxgate.gate import snapshot
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.sources.resolve import load_pins

    pins = load_pins()
    assert pins.pin_set_for({"ollama": "v0.17.5"}) == "study"
    study = pins.with_pin_set("study")
    usable, notes = snapshot.load(snapshot.pin_set_path("study")).usable_facts(default_rules(), study)
    assert notes == [] and set(usable) == {r.id for r in default_rules().rules}


# -- issue 24 item 7: gfx950 and gfx1011 are in the timeline --------------------------------------------------------
def test_gfx950_and_gfx1011_are_in_the_timeline(gfxgate_cli, tmp_path):
    run = gfxgate_cli(
        "timeline", "-t", "gfx950", "-t", "gfx1011", "--format", "json", timeout=120, env=_offline_env(tmp_path)
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert [row["target"] for row in data["targets"]] == ["gfx950", "gfx1011"]
    assert all(row["cells"] for row in data["targets"])
    from gfxgate.timeline.snapshot import default_targets

    assert {"gfx950", "gfx1011"} <= set(default_targets())


# -- issue 24 item 4: Ollama's own docs as a compared source --------------------------------------------------------
def test_docs_and_the_release_disagree_in_the_notes(gfxgate_cli, upstream, tmp_path):  # noqa: F811
    """v0.17.5's docs/gpu.mdx lists neither gfx1151 nor gfx1200, which the release builds and ships; gfx900 is neither
    listed nor shipped (no note); gfx1030 is both."""
    ollama = tmp_path / "ollama"
    repo_of_cases(
        ollama,
        {
            "v0.17.5": (
                "ollama-docs-linux-llvm-targets/v0.17.5",
                "ollama-cmake-presets-rocm/v0.17.5",
                "ollama-dockerfile-rocblas-removal/v0.17.5",
            )
        },
    )
    result = _scan(
        gfxgate_cli,
        *(a for t in ("gfx900", "gfx1030", "gfx1151") for a in ("-t", t)),
        "--ref",
        "ollama=v0.17.5",
        "--source",
        f"ollama={ollama}",
        "--source",
        f"rocm-docs={upstream / 'rocm'}",
        "--source",
        f"clr={upstream / 'clr'}",
    )
    docs = _cells(result, "ollama-docs")
    assert (docs["gfx900"]["status"], docs["gfx1030"]["status"], docs["gfx1151"]["status"]) == (
        "blocked",
        "allowed",
        "blocked",
    )
    said = [n for n in result["notes"] if n.startswith("the docs at")]
    assert len(said) == 1, said
    assert said[0].startswith("the docs at v0.17.5 do not list gfx1151 (ollama@v0.17.5:docs/gpu.mdx:"), said
    assert "but the release builds and ships it: Release build targets: built by preset(s) ROCm 6" in said[0]
    assert "Release packaging: no removal step matches gfx1151 files (ollama@v0.17.5:Dockerfile:" in said[0]


@pytest.mark.skipif(not UPSTREAM, reason="opt-in: GFXGATE_TEST_UPSTREAM=/path with the ollama, ROCm and clr clones")
def test_docs_at_v0_12_7_list_gfx900_that_the_release_deletes(gfxgate_cli):
    root = Path(UPSTREAM)
    result = _scan(
        gfxgate_cli,
        "-t",
        "gfx900",
        "--ref",
        "ollama=v0.12.7",
        "--source",
        f"ollama={root / 'ollama'}",
        "--source",
        f"rocm-docs={root / 'ROCm'}",
        "--source",
        f"clr={root / 'clr'}",
    )
    said = [n for n in result["notes"] if n.startswith("the docs at")]
    assert (
        "the docs at v0.12.7 list gfx900 (ollama@v0.12.7:docs/gpu.mdx:93), but Release packaging is blocked: the release "
        "deletes gfx900 GPU library files (`*gfx90[06]*` removes `Kernels.so-000-gfx900.hsaco`) (ollama@v0.12.7:Dockerfile:94)"
    ) in said


def test_diff_says_where_the_docs_caught_up(gfxgate_cli, tmp_path):
    """The study (v0.17.5: docs/gpu.mdx does not list gfx1151, which the release builds and ships) against today's
    release (its docs list gfx1151): the diff's notes carry the old disagreement as one the new report no longer has."""
    env = _offline_env(tmp_path)
    for name, extra in (("old.json", ["--ref", "ollama=v0.17.5"]), ("new.json", [])):
        run = gfxgate_cli(
            "scan", "-t", "gfx1151", *extra, "--format", "json", "-o", str(tmp_path / name), timeout=120, env=env
        )
        assert run.returncode == 0, run.stderr
    run = gfxgate_cli(
        "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "json", timeout=120, env=env
    )
    assert run.returncode in (0, 1), run.stderr
    notes = json.loads(run.stdout)["notes"]
    assert [n for n in notes if "docs" in n] == [
        n
        for n in notes
        if n.startswith(
            "old, no longer in the new report: the docs at v0.17.5 do not list gfx1151 (ollama@v0.17.5:docs/gpu.mdx:"
        )
    ]
    assert len([n for n in notes if "docs" in n]) == 1
    new = json.loads((tmp_path / "new.json").read_text())
    assert _cells(new, "ollama-docs")["gfx1151"]["status"] == "allowed"


def test_timeline_says_where_the_docs_and_the_release_disagree(gfxgate_cli, tmp_path):
    """v0.12.7 moved the GPU page to docs/gpu.mdx with gfx900 back in its table, three releases after the release
    stopped building and shipping gfx900 (v0.12.4): the embedded timeline's gfx900 row says so, with both lines."""
    env = _offline_env(tmp_path)
    run = gfxgate_cli("timeline", "-t", "gfx900", "--format", "json", timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    (row,) = json.loads(run.stdout)["targets"]
    docs = [note for cell in row["cells"] for note in cell.get("docs", ())]
    assert (
        "the docs at v0.12.7 list gfx900 (ollama@v0.12.7:docs/gpu.mdx:93), but Release packaging is blocked: the release "
        "deletes gfx900 GPU library files (`*gfx90[06]*` removes `Kernels.so-000-gfx900.hsaco`); in the bundled "
        "rocBLAS's target list (gfx900) (ollama@v0.12.7:Dockerfile:94)"
    ) in docs
    assert not any(
        "v0.12.4" in note or "v0.12.11" in note for note in docs
    )  # the docs there leave gfx900 out, as the release
    md = gfxgate_cli("timeline", "-t", "gfx900", timeout=120, env=env)
    assert (
        "Where Ollama's docs and the release disagree:" in md.stdout and "the docs at v0.12.7 list gfx900" in md.stdout
    )
