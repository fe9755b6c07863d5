"""`gfxgate timeline` on a real git repository with release tags (tests/prcheck/upstream.py), and the shipped snapshot."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import replace

import pytest

from tests.conftest import schema_validator
from gfxgate.cli import main
from gfxgate.errors import InputError, RuleError

GFX900_ROCM = ["ROCm out of the box", "ROCm: build + rocBLAS files", "undecided"]


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def timeline_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, "timeline", "--format", "json", *args)
    assert code == 0, err
    data = json.loads(out)
    schema_validator("timeline").validate(data)  # jsonschema.validate, its schema checked once per module
    return data


def row(data: dict, target: str) -> dict:
    return next(t for t in data["targets"] if t["target"] == target)


def test_gfx900_over_the_release_tags(timeline_env, capsys):
    data = timeline_json(capsys, "--live", "-t", "gfx900", "-t", "gfx1030")
    assert data["range"]["from"] == "v0.11.0" and data["range"]["to"] == "v0.14.10" and data["range"]["tags"] == 8
    assert data["origin"] == "live"
    cells = row(data, "gfx900")["cells"]
    assert [(c["from"], c["to"], c["label"]) for c in cells] == [
        ("v0.11.0", "v0.13.1", "ROCm out of the box"),
        ("v0.14.0", "v0.14.9", "ROCm: build + rocBLAS files"),
        ("v0.14.10", "v0.14.10", "undecided"),
    ]
    assert cells[0]["start"] == [] and cells[0]["evidence"]  # the first release: why the route applies
    # the flip that ends the first cell is the one that starts the second, with the Dockerfile line and its link
    packaging = next(f for f in cells[1]["start"] if f["layer"] == "release-packaging")
    assert (packaging["old"], packaging["new"], packaging["kind"], packaging["previous_tag"]) == (
        "allowed",
        "blocked",
        "regression",
        "v0.13.1",
    )
    assert packaging["evidence"][0]["where"] == "ollama@v0.14.0:Dockerfile:3"
    assert packaging["evidence"][0]["url"].startswith("https://github.com/ollama/ollama/blob/")
    assert packaging["evidence"][0]["url"].endswith("/Dockerfile#L3")
    assert cells[0]["end"] == cells[1]["start"]
    assert cells[1]["steps"] == ["build-amdgpu-targets", "copy-rocblas-tensile"]
    drift = next(f for f in cells[2]["start"] if f["layer"] == "cmake-filter")
    assert drift["new"] == "unknown" and "did not match" in drift["reason"]
    assert cells[2]["reason"] and "Build target list (from source) is unknown" in cells[2]["reason"]
    gfx1030 = row(data, "gfx1030")["cells"]
    assert [c["label"] for c in gfx1030][0] == "ROCm out of the box"
    # the columns are the ranges where no target's route changes
    assert {"from": "v0.14.0", "to": "v0.14.9"} in data["columns"]


def test_the_answer_sentence_is_computed_with_evidence(timeline_env, capsys):
    data = timeline_json(capsys, "--live", "-t", "gfx900")
    answer = row(data, "gfx900")
    assert answer["sentence"].startswith(
        "gfx900: ROCm out of the box up to v0.13.1; from v0.14.0 ROCm needs a source build and the rocBLAS files; "
        "from v0.14.10 ROCm undecided"
    )
    rocm = [c for c in answer["clauses"] if c["backend"] == "rocm"]
    assert [c["tag"] for c in rocm] == ["v0.11.0", "v0.14.0", "v0.14.10"]
    assert all(c["evidence"] for c in rocm)
    assert any(e["where"] == "ollama@v0.14.0:Dockerfile:3" for e in rocm[1]["evidence"])
    # a drift to unknown has no new line: the evidence is the line that disappeared (at the release before)
    assert any(e["where"].startswith("ollama@v0.14.9:CMakeLists.txt") for e in rocm[2]["evidence"])


def test_bisection_agrees_with_every_tag_and_probes_less(timeline_env, capsys):
    bisect = timeline_json(capsys, "--live", "-t", "gfx900", "-t", "gfx1031")
    every = timeline_json(capsys, "--live", "-t", "gfx900", "-t", "gfx1031", "--every-tag")
    assert every["method"] == "every-tag" and every["range"]["probed"] == 8
    assert bisect["targets"] == every["targets"]
    # where nothing changes (v0.11.0 … v0.12.0: a README edit, moved lines) only the ends are read
    quiet = timeline_json(capsys, "--live", "-t", "gfx900", "--from", "v0.11.0", "--to", "v0.12.0")
    assert quiet["range"]["tags"] == 3 and quiet["range"]["probed"] == 2
    assert len(row(quiet, "gfx900")["cells"]) == 1


def test_a_walk_starts_each_git_reader_and_resolves_each_ref_once(timeline_env, capsys, monkeypatch):
    """Each probe of a walk opens its sources anew, but their git repositories are the walk's (TagProber): a
    repository's `git cat-file` readers start once and each ref is resolved once per repository, however many tags
    are probed (counted, not timed). Before, every probe started them again: issue 28's defect-16 replay (40 tags)
    ran 841 git processes, 360 of them `rev-parse` of the same refs; 100 now."""
    from collections import Counter

    from gfxgate.sources import gitrepo

    readers: Counter = Counter()
    resolved: Counter = Counter()
    real_cat_file, real_run_git = gitrepo._cat_file, gitrepo.run_git

    def cat_file(argv, env):
        readers[(argv[2], argv[-1])] += 1  # (git dir, --batch or --batch-check)
        return real_cat_file(argv, env)

    def run_git(args, **kwargs):
        if args[0] == "rev-parse" and "--verify" in args:
            resolved[(str(kwargs.get("git_dir")), args[-1])] += 1
        return real_run_git(args, **kwargs)

    monkeypatch.setattr(gitrepo, "_cat_file", cat_file)
    monkeypatch.setattr(gitrepo, "run_git", run_git)
    data = timeline_json(capsys, "--live", "-t", "gfx900", "--every-tag")
    assert data["range"]["probed"] == 8
    assert len({folder for folder, _ in readers}) >= 2 and set(readers.values()) == {1}, readers
    assert len(resolved) >= 8 and set(resolved.values()) == {1}, resolved


def test_a_window_of_releases_clips_the_cells(timeline_env, capsys):
    data = timeline_json(capsys, "--live", "-t", "gfx900", "--from", "v0.12.0", "--to", "v0.14.0")
    cells = row(data, "gfx900")["cells"]
    assert [(c["from"], c["to"]) for c in cells] == [("v0.12.0", "v0.13.1"), ("v0.14.0", "v0.14.0")]
    assert cells[-1]["end"] == []
    code, _, err = run(capsys, "timeline", "--live", "-t", "gfx900", "--from", "v0.12.5")
    assert code != 0 and "v0.12.5" in err and "nearest" in err


def test_markdown_table_and_answers(timeline_env, capsys):
    code, out, err = run(capsys, "timeline", "--live", "-t", "gfx900", "-t", "gfx1030")
    assert code == 0, err
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("| Target |"))
    assert "v0.11.0 – v0.13.1" in header and "v0.14.0 – v0.14.9" in header
    assert "| gfx900 | ROCm out of the box | ROCm: build + rocBLAS files | undecided |" in out
    assert "### gfx900" in out and "`ollama@v0.14.0:Dockerfile:3`" in out


def test_a_flip_of_evidence_only_does_not_read_as_a_status_change(capsys):
    """At v0.30.0 the build presets moved to llama/server/: the status of cmake-filter stays, its evidence moved.
    The flips column used to print that as "override-required → override-required"."""
    import re

    code, md, err = run(capsys, "timeline", "-t", "gfx900")
    assert code == 0, err
    same = [m.group(0) for m in re.finditer(r"\b([a-z-]+) → \1\b", md)]
    assert same == []
    assert "cmake-filter still override-required, evidence moved (`ollama@v0.30.0:llama/server/CMakePresets.json:" in md
    assert (
        "discovery allowed → override-required (`ollama@v0.30.0:discover/amd.go:" in md
    )  # a real flip keeps its arrow
    # a flip to unknown says why (its evidence would be the old cell's, from an older release)
    assert (
        "source-macros allowed → unknown (ggml HIP family macros (ggml-cuda/vendors/hip.h): source not available: "
        in md
    )
    assert "→ unknown (`ollama@v0.24.0:" not in md


def test_timeline_snapshot_round_trip_and_staleness(timeline_env, tmp_path, capsys):
    from gfxgate.timeline import snapshot as snap

    path = tmp_path / "timeline.json"
    code, _, err = run(capsys, "snapshot", "timeline", "-t", "gfx900", "-o", str(path))
    assert code == 0, err
    loaded = snap.load(path)
    assert loaded.origin == "snapshot" and loaded.targets == ("gfx900",)
    assert [c.label for c in loaded.row("gfx900").cells] == GFX900_ROCM
    data = snap.read(path)
    data["inputs"]["routes"] = "0" * 16
    path.write_bytes(snap.dumps(data))
    with pytest.raises(RuleError, match="stale.*routes changed"):
        snap.load(path)
    path.write_bytes(b"not zstd at all")
    with pytest.raises(InputError, match="not a zstandard-compressed timeline snapshot"):
        snap.load(path)


def test_the_shipped_snapshot_is_fresh_and_answers_gfx900(capsys):
    """Offline by default: the embedded timeline covers the issue's targets and is not stale for the rules."""
    from gfxgate.timeline import snapshot as snap

    data = snap.read(snap.default_path())
    assert snap.stale_reasons(data) == [], "run `gfxgate snapshot timeline --source ollama=CLONE --source clr=CLONE`"
    assert snap.default_path().stat().st_size < 200_000
    out = timeline_json(capsys)
    assert out["origin"] == "snapshot"
    wanted = "gfx803 gfx900 gfx906 gfx908 gfx90a gfx90c gfx1010 gfx1012 gfx1030 gfx1031 gfx1032 gfx1035 gfx1100 gfx1101 gfx1103 gfx1150 gfx1151 gfx1200 gfx1201".split()
    assert set(wanted) <= {t["target"] for t in out["targets"]}
    assert out["targets"][0]["cells"][0]["from"] == "v0.0.1"
    # every cell is bounded by the flips that start and end it, each flip with its evidence lines (or its reason)
    for t in out["targets"]:
        for before, after in zip(t["cells"], t["cells"][1:]):
            assert after["start"] and before["end"] == after["start"], (t["target"], after["from"])
            assert all(f["evidence"] or f["reason"] for f in after["start"])
            # read at that release: ollama's files, or clr's at the ROCm that release's Dockerfile names
            assert any(
                e["where"].startswith(f"ollama@{after['from']}:")
                or f["layer"] == "rocm-runtime"
                and e["where"].startswith("clr@rocm-")
                for f in after["start"]
                for e in f["evidence"]
            ) or any(f["reason"] for f in after["start"]), (t["target"], after["from"])
        assert t["cells"][0]["start"] == [] and t["cells"][-1]["end"] == []
        # a decided cell cites its lines; an undecided one (NVIDIA's before v0.5.8, below) says why instead
        assert all(c["evidence"] or (c["route"] == "undecided" and c["reason"]) for c in t["cells"]), t["target"]
    # every cell of every AMD target is decided over the whole range (the build scripts before CMake have rules);
    # NVIDIA's too, but where the release builds CUDA with llama.cpp's own default list (v0.0.20 … v0.1.24, the
    # vendored CMakeLists.txt is not read) and, for Jetson GPUs, before the JetPack presets (v0.5.8): those cells
    # say undecided with the reason rather than guess (docs/nvidia.md); v0.0.1 … v0.0.19 build no CUDA runner
    undecided = [
        (t["target"], c["from"], c["to"], c["reason"])
        for t in out["targets"]
        for c in t["cells"]
        if c["route"] == "undecided"
    ]
    assert [u for u in undecided if not u[0].startswith("sm_")] == []
    assert {(first, last) for _, first, last, _ in undecided} <= {("v0.0.20", "v0.1.24"), ("v0.0.20", "v0.5.7")}, (
        undecided
    )
    assert all("llama.cpp's default" in reason or "JetPack" in reason for *_, reason in undecided), undecided
    sentence = row(out, "sm_61")["sentence"]
    assert "CUDA undecided from v0.0.20, out of the box from v0.1.25" in sentence, sentence
    assert row(out, "sm_61")["cells"][0]["route"] == "cpu"  # v0.0.1 … v0.0.19: no CUDA runner at all
    # the sentence, as the sources have it: ROCm from v0.1.18 (no ROCm build before), Vulkan in the release
    # archives from v0.13.0 (v0.12.6 … v0.12.11 build it but their tarballs lack it: issue 36); each clause starts
    # where its evidence was read
    clauses = {(c["backend"], c["tag"]): c for c in row(out, "gfx900")["clauses"]}
    texts = [(c["tag"], c["text"]) for c in row(out, "gfx900")["clauses"]]
    assert ("v0.1.18", "from v0.1.18 ROCm out of the box") in texts
    assert ("v0.12.4", "from v0.12.4 ROCm needs a source build and the rocBLAS files") in texts
    assert [t for b, t in clauses if b == "vulkan"] == ["v0.13.0", "v0.30.0"]
    assert "Vulkan opt-in from v0.13.0, default from v0.30.0" in row(out, "gfx900")["sentence"]
    for (backend, tag), clause in clauses.items():
        assert clause["evidence"], clause
        if tag != "v0.0.1":
            assert any(e["where"].startswith(f"ollama@{tag}:") for e in clause["evidence"]), clause


def test_hostile_arguments_fail_in_one_line(capsys):
    code, _, err = run(capsys, "timeline", "-t", "gfx9000")
    assert code == 2 and err.count("\n") <= 3
    code, _, err = run(capsys, "timeline", "-t", "gfx900", "--from", "v0.12.4", "--to", "v0.12.3")
    assert code != 0 and "comes after" in err
    code, _, err = run(capsys, "timeline", "-t", "gfx9-generic")  # a known target the snapshot does not hold (generic)
    assert code == 2 and "--live" in err
    code, _, err = run(capsys, "timeline", "--to", "v0.12.99")  # an unknown tag: exit 4 with the nearest tags
    assert code == 4 and "nearest tags" in err


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    (crc,) = struct.unpack(">I", data[16 + length : 20 + length])
    assert crc == zlib.crc32(data[12 : 16 + length])
    return struct.unpack(">II", data[16:24])


def test_png_is_valid_and_coloured_by_route(timeline_env, tmp_path, capsys):
    from PIL import Image

    from gfxgate.timeline import figure

    out = tmp_path / "t.png"
    code, _, err = run(capsys, "timeline", "--live", "-t", "gfx900", "--format", "png", "-o", str(out))
    assert code == 0, err
    data = out.read_bytes()
    width, height = png_size(data)
    image = Image.open(out)
    image.verify()
    image = Image.open(out).convert("RGB")
    tl = _live(timeline_env, ["gfx900"])
    fig = figure.layout(tl)
    assert (width, height) == (fig.width * 2, fig.height * 2)
    colours = figure.palette(tl.key)
    for shape in fig.shapes:
        if isinstance(shape, figure.Rect) and shape.css.startswith("cell "):
            key = shape.css.split("route-")[1]
            x, y = int((shape.x + shape.w * 0.5) * 2), int((shape.y + 3) * 2)
            assert image.getpixel((x, y)) == _rgb(colours[key][0]), shape.title


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def _live(env, targets):
    from gfxgate.app.timeline import compute_live

    return compute_live(targets, None, None, {}, True, False, False).result


def test_svg_renders_in_a_real_browser(timeline_env, tmp_path, capsys):
    """Debian's chromium, headless, as a person would open the file: pixels of every cell and the DOM it built."""
    import subprocess

    from PIL import Image

    from gfxgate.timeline import figure
    from tests.conftest import require_tool

    chromium = require_tool("chromium")
    svg = tmp_path / "timeline.svg"
    code, _, err = run(capsys, "timeline", "--live", "-t", "gfx900", "-t", "gfx1030", "--format", "svg", "-o", str(svg))
    assert code == 0, err
    tl = _live(timeline_env, ["gfx900", "gfx1030"])
    fig = figure.layout(tl)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ]
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [chromium, *flags, f"--screenshot={shot}", f"--window-size={fig.width},{fig.height}", svg.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file(), done.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    colours = figure.palette(tl.key)
    cells = [s for s in fig.shapes if isinstance(s, figure.Rect) and s.css.startswith("cell ")]
    assert cells
    for shape in cells:
        key = shape.css.split("route-")[1]
        x, y = int(shape.x + shape.w * 0.5), int(shape.y + 3)
        got = image.getpixel((x, y))
        assert max(abs(a - b) for a, b in zip(got, _rgb(colours[key][0]))) <= 3, (shape.title, got)
    # the DOM the browser built: every cell a rect with its tooltip, every flip a link to its evidence
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><html><body>" + svg.read_text(encoding="utf-8") + "<script>"
        "const r=[...document.querySelectorAll('rect.cell')];"
        "const f=[...document.querySelectorAll('a rect.flip')];"
        "const box=document.querySelector('svg').getBoundingClientRect();"
        "document.body.setAttribute('data-result', JSON.stringify({cells:r.length, titled:r.filter(e=>e.querySelector('title')).length,"
        "flips:f.length, links:f.map(e=>e.parentNode.getAttribute('href')), width:box.width, height:box.height}));"
        "</script></body></html>",
        encoding="utf-8",
    )
    done = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    marker = 'data-result="'
    raw = done.stdout[done.stdout.index(marker) + len(marker) :]
    result = json.loads(raw[: raw.index('"')].replace("&quot;", '"').replace("&amp;", "&"))
    assert result["cells"] == len(cells) == result["titled"]
    assert result["flips"] == sum(len(r.cells) - 1 for r in tl.rows)
    assert all(link.startswith("https://github.com/ollama/ollama/blob/") for link in result["links"])
    assert (result["width"], result["height"]) == (fig.width, fig.height)


def test_the_readme_pictures_are_the_snapshot_timeline_per_vendor():
    """samples/timeline.png (AMD) and timeline-nvidia.png are valid PNGs of the embedded timeline's layout for that
    vendor's targets (pixels depend on fonts: not compared), each shown in docs/commands/timeline.md."""
    from gfxgate.app.samples import timelines
    from gfxgate.resources import rules_dir
    from gfxgate.timeline import figure

    page = (rules_dir().parent / "docs" / "commands" / "timeline.md").read_text(encoding="utf-8")
    for name, timeline in timelines().items():
        data = (rules_dir().parent / "samples" / f"{name}.png").read_bytes()
        fig = figure.layout(timeline, interactive=False)  # the PNG's layout (render_png): no hover hints
        assert png_size(data) == (fig.width * 2, fig.height * 2), f"samples/{name}.png is stale: run `gfxgate samples`"
        assert f"](../../samples/{name}.png)" in page


def test_every_sample_is_under_200_kb():
    """Issue 40: no sample `gfxgate samples` writes is over 200 KB (the whole timeline was 274 KB of Markdown, 329 KB
    of SVG, a 206 KB PNG): the timeline is one file of each kind per vendor. (samples/h200/'s worklogs are inputs.)"""
    from gfxgate.app.samples import H200
    from gfxgate.resources import rules_dir

    folder = rules_dir().parent / "samples"
    inputs = (
        f"{H200}/logs/",
        f"{H200}/sweep.jsonl.zst",
        f"{H200}/soak.jsonl.zst",
    )  # what the H200 samples are rendered from
    written = [p for p in folder.rglob("*") if p.is_file() and not p.relative_to(folder).as_posix().startswith(inputs)]
    assert any(p.name == "timeline-nvidia.svg" for p in written)
    big = {p.relative_to(folder).as_posix(): p.stat().st_size for p in written if p.stat().st_size > 200_000}
    assert not big, f"samples over 200 KB: {big}"


def test_a_source_that_cannot_be_read_is_one_line_per_source(tmp_path, monkeypatch, capsys, timeline_upstream):
    """ggml from the llama.cpp tag LLAMA_CPP_VERSION names, with no llama.cpp to read: one stderr line for the source
    (count, releases, rules, how to supply it); every rule and release with --verbose and in the JSON. (clr, read at
    each release's coupled ROCm for the rocm-runtime row, is given.)"""
    from tests.upstream_fixtures import AMD_COMMON_GO, CMAKE, COMMON_CUH, GGML, HIP_H, OLD_REGEX, presets
    from tests.gitrepos import commit_tree, new_repo

    repo = new_repo(tmp_path / "ollama")
    vendored = {f"{GGML}/vendors/hip.h": HIP_H, f"{GGML}/common.cuh": COMMON_CUH}
    commit_tree(
        repo,
        {
            "CMakeLists.txt": CMAKE.format(regex=OLD_REGEX),
            "CMakePresets.json": presets("gfx900"),
            "discover/amd_common.go": AMD_COMMON_GO,
            **vendored,
        },
        "v0.1.0",
        tag="v0.1.0",
    )
    commit_tree(repo, {**{k: None for k in vendored}, "LLAMA_CPP_VERSION": "b1234\n"}, "v0.2.0", tag="v0.2.0")
    commit_tree(repo, {"README.md": "v0.3.0\n"}, "v0.3.0", tag="v0.3.0")
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(tmp_path / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(tmp_path / "no-llama-cpp-here"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(timeline_upstream["GFXGATE_SOURCE_CLR"]))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(timeline_upstream["GFXGATE_SOURCE_ROCBLAS"]))
    code, out, err = run(capsys, "timeline", "--live", "--offline", "-t", "gfx900", "--every-tag")
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("gfxgate: note:")]
    assert len(notes) == 1, err
    assert "llama-cpp could not be read at 2 probed release(s) (v0.2.0 … v0.3.0)" in notes[0]
    assert "--source llama-cpp=CLONE" in notes[0] and "without --offline" in notes[0]
    assert "ggml-hip-family-macros" in notes[0]
    assert "## Sources that could not be read" in out and out.count("llama-cpp could not be read") == 1
    code, out, err = run(capsys, "timeline", "--live", "--offline", "-t", "gfx900", "--every-tag", "--verbose")
    detail = [line for line in err.splitlines() if line.startswith("gfxgate: note: v0.")]
    rules = {line.split()[3].rstrip(":") for line in detail}
    assert {line.split()[2] for line in detail} == {"v0.2.0", "v0.3.0"} and "ggml-hip-family-macros" in rules
    assert len(detail) == 2 * len(rules)
    data = timeline_json(capsys, "--live", "--offline", "-t", "gfx900", "--every-tag")
    assert {(u["tag"], u["source"]) for u in data["unreadable"]} == {("v0.2.0", "llama-cpp"), ("v0.3.0", "llama-cpp")}
    [missing] = data["missing_sources"]
    assert (
        missing["tags"] == ["v0.2.0", "v0.3.0"]
        and missing["source"] == "llama-cpp"
        and sorted(missing["rules"]) == sorted(rules)
    )
    assert data["notes"] == []  # said once, grouped by source, not once per rule and release


@pytest.mark.empty_cache  # a first run checks the schema; the seeded cache would already hold the check
def test_the_shipped_snapshot_is_schema_checked_once_per_content(monkeypatch, tmp_path):
    """The embedded snapshot's schema check runs once per content (cached like the rules); a snapshot that is
    not gfxgate's own file is checked on every load, and a broken one is still refused."""
    import shutil

    from gfxgate import datafiles
    from gfxgate.timeline import snapshot as snap

    checked = []
    real = datafiles.validate

    def counting(data, schema, path, lines):
        checked.append((schema, str(path)))
        return real(data, schema, path, lines)

    monkeypatch.setattr(datafiles, "validate", counting)
    monkeypatch.setattr(snap, "validate", counting)  # the snapshot module's own name for it (imported at its top)
    from gfxgate import datacache

    datacache.reset()  # this test's own (empty) cache folder, not what an earlier test left in this process
    first, second = snap.load(), snap.load()
    assert first.targets == second.targets
    assert [s for s, _ in checked].count("timeline") == 1, checked

    copy = tmp_path / "timeline.json.zst"
    shutil.copyfile(snap.default_path(), copy)
    checked.clear()
    snap.load(copy), snap.load(copy)
    assert [s for s, _ in checked].count("timeline") == 2, checked

    data = snap.read(copy)
    # refused whatever its size: one target's row is kept (recompressing and checking all 38 took 1.3 s of CPU)
    data["timeline"]["targets"] = data["timeline"]["targets"][:1]
    data["timeline"]["targets"][0]["cells"] = "not a list"
    copy.write_bytes(snap.dumps(data))
    with pytest.raises(RuleError, match="timeline.json.zst"):
        snap.load(copy)


def test_formatters_read_no_rules(monkeypatch):
    """The timeline carries what its formatters need of rules/routes.yaml (colours, legends, each backend's layers):
    formatting the shipped snapshot in every format loads no rules."""
    from gfxgate.gate import route
    from gfxgate.timeline import snapshot
    from gfxgate.timeline.render import FORMATS, render

    timeline = snapshot.load().select(["gfx900", "gfx1030"])
    expected = {fmt: render(timeline, fmt) for fmt in FORMATS}

    def forbidden(*args, **kwargs):
        raise AssertionError("a formatter loaded rules/routes.yaml")

    monkeypatch.setattr(route, "default_routes", forbidden)
    monkeypatch.setattr(route, "load_routes", forbidden)
    monkeypatch.setattr(snapshot, "default_routes", forbidden)  # imported at the snapshot module's top
    for fmt in FORMATS:
        assert render(timeline, fmt) == expected[fmt], fmt
    assert "gfx900: " in render(timeline, "md") and "#" in render(timeline, "svg")


def test_a_run_without_a_route_cites_each_refusal_with_its_releases():
    """One "has no route" run whose refusing layers change (a build list, then a runtime row) cites each, with the
    releases it covers; a run later in the range says them after its "from"."""
    from gfxgate.timeline.model import BackendState, Cell, Ev, Refusal, RouteKey, Row, Timeline
    from gfxgate.timeline.sentence import answer

    tags = ("v1", "v2", "v3", "v4", "v5", "v6")
    build, runtime, ok = Ev("app@v1:build.sh:3", "list"), Ev("rt@6.0:table.cpp:9", "table"), Ev("app@v1:ok.txt:1")

    def cell(first, last, state, refused=()):
        rocm = BackendState(
            "rocm",
            state,
            "ROCm",
            "out of the box" if state == "route" else None,
            None,
            tuple(r.evidence for r in refused) or (ok,),
            tuple(refused),
        )
        return Cell(
            "gfx1", first, last, tags.index(last) - tags.index(first) + 1, "r", "L", True, (rocm,), (), (), (ok,)
        )

    first_none = [
        cell("v1", "v1", "none", (Refusal("build", build),)),
        cell("v2", "v3", "none", (Refusal("build", build), Refusal("runtime", runtime))),
    ]
    key = RouteKey((), "#cccccc", ())
    timeline = Timeline(
        "app",
        tags,
        6,
        "every-tag",
        False,
        (Row("gfx1", (*first_none, cell("v4", "v6", "route"))),),
        "live",
        key,
        backends=(("rocm", "ROCm"),),
    )
    ans = answer(timeline, "gfx1")
    assert ans.sentence == (
        "gfx1: ROCm has no route up to v1 (app@v1:build.sh:3), v2–v3 (rt@6.0:table.cpp:9); from v4 ROCm out of the box"
    )
    assert [(c.tag, c.text, c.evidence[0].where) for c in ans.clauses[:2]] == [
        ("v1", "ROCm has no route up to v1", "app@v1:build.sh:3"),
        ("v2", "ROCm has no route v2–v3", "rt@6.0:table.cpp:9"),
    ]
    later = Timeline(
        "app",
        tags,
        6,
        "every-tag",
        False,
        (
            Row(
                "gfx1",
                (
                    cell("v1", "v1", "route"),
                    *[
                        replace(c, first=f, last=l, tags=n)
                        for c, (f, l, n) in zip(first_none, [("v2", "v2", 1), ("v3", "v6", 4)])
                    ],
                ),
            ),
        ),
        "live",
        key,
        backends=(("rocm", "ROCm"),),
    )
    assert answer(later, "gfx1").sentence == (
        "gfx1: ROCm out of the box up to v1; from v2 ROCm has no route: v2 (app@v1:build.sh:3), v3–v6 (rt@6.0:table.cpp:9)"
    )
