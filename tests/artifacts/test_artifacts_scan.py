"""Walking folders (symlink loops, aliases, special files), per-file errors, verdicts, renderers and the CLI."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from gfxgate.artifacts import compat
from gfxgate.artifacts.render import ArtifactsResult, render
from gfxgate.artifacts.model import CODE_OBJECT, HIP_HOST, OTHER, SKIPPED
from gfxgate.artifacts.scan import scan_file, scan_paths
from gfxgate.artifacts.verdicts import INSTALLED_LAYER, ROCBLAS_LAYER, artifact_verdicts
from gfxgate.model import Status
from gfxgate.targets import catalog


@pytest.fixture
def tree(built, tmp_path):
    root = tmp_path / "lib"
    (root / "sub").mkdir(parents=True)
    shutil.copy(built.hip_so("libplain.so"), root / "libk.so.1.0")
    os.symlink("libk.so.1.0", root / "libk.so")
    shutil.copy(built.code_object("gfx1030"), root / "sub" / "blit.co")
    (root / "sub" / "notes.txt").write_text("gfx900 is mentioned here, but this is text")
    (root / "truncated.hsaco").write_bytes(built.code_object("gfx900").read_bytes()[:40])
    os.symlink("..", root / "sub" / "loop")
    os.symlink("missing", root / "dangling")
    os.mkfifo(root / "fifo")
    return root


def test_walk_reports_every_skip_with_a_reason(tree):
    report = scan_paths([tree])
    by_name = {os.path.relpath(f.path, tree): f for f in report.files}
    assert by_name["libk.so.1.0"].kind == HIP_HOST
    assert by_name["libk.so"].skipped.startswith("same file as")
    assert by_name["sub/blit.co"].kind == CODE_OBJECT
    assert by_name["sub/notes.txt"].kind == OTHER
    assert "symlink loop" in by_name["sub/loop"].skipped
    assert by_name["dangling"].skipped == "broken symlink"
    assert "not a regular file" in by_name["fifo"].skipped
    trunc = by_name["truncated.hsaco"]
    assert trunc.errors and "runs past the end" in trunc.errors[0].message and not trunc.code_objects


def test_unreadable_file_is_skipped(tree, monkeypatch):
    import builtins

    real_open = builtins.open

    def deny(path, *args, **kwargs):
        if str(path).endswith("blit.co"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    report = scan_file(tree / "sub" / "blit.co")
    assert report.kind == SKIPPED and report.skipped == "unreadable: Permission denied"


def test_json_is_versioned_sorted_and_stable(tree):
    targets = [catalog().parse("gfx900"), catalog().parse("gfx1031")]
    outs = []
    for jobs in (1, 4):
        report = scan_paths([tree], jobs=jobs, sha256=True)
        outs.append(
            render(ArtifactsResult(report, tuple(map(str, targets)), artifact_verdicts(report, targets)), "json")
        )
    assert outs[0] == outs[1]
    data = json.loads(outs[0])
    assert (data["schema_version"], data["kind"]) == (1, "artifacts")
    import jsonschema

    from gfxgate.datafiles import load_schema

    SCHEMA = load_schema("artifacts")

    jsonschema.validate(data, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # the schema is not vacuous
        jsonschema.validate({**data, "files": [{**data["files"][0], "kind": "binary"}]}, SCHEMA)
    assert list(data) == sorted(data)
    paths = [f["path"] for f in data["files"]]
    assert paths == sorted(paths)
    hsaco = next(f for f in data["files"] if f["path"].endswith("blit.co"))
    import hashlib

    assert hsaco["sha256"] == hashlib.sha256((tree / "sub" / "blit.co").read_bytes()).hexdigest()
    answers = {(a["layer"], a["target"]): a for a in data["answers"]}
    assert answers[(INSTALLED_LAYER, "gfx900")]["status"] == "allowed"
    assert answers[(INSTALLED_LAYER, "gfx1031")]["status"] == "override-required"
    assert answers[(ROCBLAS_LAYER, "gfx900")]["status"] == "unknown"


def test_every_format_renders(tree):
    report = scan_paths([tree])
    cells = artifact_verdicts(report, [catalog().parse("gfx900")])
    result = ArtifactsResult(report, ("gfx900",), cells)
    md, text = render(result, "md"), render(result, "text")
    assert "| gfx900 | installed-gpu-code | **allowed** |" in md
    assert "libk.so.1.0: hip-host-elf: gfx900, gfx906:xnack-" in text
    assert "truncated.hsaco" in md and "error" in md


def test_verdicts_for_each_status(built, tmp_path):
    only_plus = tmp_path / "plus"
    only_plus.mkdir()
    shutil.copy(built.code_object("gfx90a:xnack+"), only_plus / "k.hsaco")
    report = scan_paths([only_plus])
    cells = artifact_verdicts(report, [catalog().parse(t) for t in ("gfx90a", "gfx90a:xnack-", "gfx1100")])
    assert cells[(INSTALLED_LAYER, "gfx90a")].status is Status.PARTIAL  # runs only with xnack on
    assert cells[(INSTALLED_LAYER, "gfx90a:xnack-")].status is Status.BLOCKED
    assert cells[(INSTALLED_LAYER, "gfx1100")].status is Status.BLOCKED
    for (layer, _), verdict in cells.items():
        if layer == INSTALLED_LAYER:
            assert verdict.evidence[0].location.path.endswith("k.hsaco")
    empty = artifact_verdicts(scan_paths([]), [catalog().parse("gfx900")])
    assert {v.status for v in empty.values()} == {Status.UNKNOWN}


def test_compat_answers():
    dev = catalog().parse("gfx900")
    assert compat.direct_match("gfx9-generic", dev).kind == compat.GENERIC
    assert compat.direct_match("gfx900:xnack+", dev).kind == compat.CONDITIONAL
    assert compat.direct_match("gfx900:xnack-", catalog().parse("gfx900:xnack+")).kind == compat.NONE
    over = compat.override_match("gfx906:xnack-", dev)
    assert over.override == "9.0.6" and "gfx906:xnack-" in over.detail
    assert compat.override_match("gfx1030", dev) is None  # not in gfx900's ISA family
    assert compat.override_match("gfx908:xnack-", dev) is None  # gfx908 is not a gfx9-generic member


def test_cli_writes_report(built, tmp_path, gfxgate_cli):
    out = tmp_path / "r.json"
    so = built.hip_so("libplain.so")
    done = gfxgate_cli(
        "artifacts",
        str(so),
        "--target",
        "gfx906",
        "--kernels",
        "--format",
        "json",
        "-o",
        str(out),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the report went to -o
    data = json.loads(out.read_text())
    import jsonschema

    from gfxgate.datafiles import load_schema

    SCHEMA = load_schema("artifacts")

    jsonschema.validate(data, SCHEMA)
    (f,) = data["files"]
    assert f["kernel_counts"] == {"gfx900": 1, "gfx906:xnack-": 1}
    assert f["targets"] == {"gfx900": 1, "gfx906:xnack-": 1}
    assert {k for c in f["code_objects"] for k in c["kernels"]} == {"_Z6vadd_0PfPKf"}
    assert data["answers"][0]["status"] == "allowed"


def test_cli_missing_path_is_an_input_error(tmp_path, gfxgate_cli):
    missing = tmp_path / "nope"
    done = gfxgate_cli("artifacts", str(missing), timeout=120, check=False)
    assert done.returncode == 6  # README: a path given to artifacts does not exist
    assert done.stderr.startswith("gfxgate: error: ") and str(missing) in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_progress_is_reported_per_file(tree):
    seen: list[str] = []
    report = scan_paths([tree], jobs=2, progress=seen.append)
    assert sorted(seen) == sorted(f.path for f in report.files)


def test_default_paths_are_the_existing_ones(tmp_path, monkeypatch):
    from gfxgate.host import install

    (tmp_path / "ollama").mkdir()
    monkeypatch.setattr(install, "GPU_CODE_DIRS", (str(tmp_path / "ollama"), str(tmp_path / "absent")))
    paths = install.gpu_code_dirs()
    assert paths[0] == tmp_path / "ollama" and tmp_path / "absent" not in paths


def test_override_names_the_nearest_processor(built, tmp_path):
    for mcpu in ("gfx906:xnack-", "gfx900"):
        shutil.copy(built.code_object(mcpu), tmp_path / f"a-{mcpu.replace(':', '_')}.hsaco")
    cells = artifact_verdicts(scan_paths([tmp_path]), [catalog().parse("gfx902")])
    v = cells[(INSTALLED_LAYER, "gfx902")]
    assert v.status is Status.OVERRIDE_REQUIRED
    assert v.remedy.startswith("HSA_OVERRIDE_GFX_VERSION=9.0.0 ") and "loads the gfx900 code" in v.remedy
    assert v.workarounds == ("HSA_OVERRIDE_GFX_VERSION=9.0.6",)
