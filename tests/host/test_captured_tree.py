"""Issue 41 (hostile input, round 4), the captured-tree reader: ``doctor --root DIR`` on captures that a stranger
could send, replayed through the installed script under the bounds of tests/test_issue13_reproductions.py (exit
code, one error line or none, < 5 s of CPU, < 512 MB, nothing in the working folder changed but the named output).

Items: 1 stat.json that is a device, a FIFO, a sparse file; 2 a FIFO wherever a file is read; 3 links out of the
root; 6 many files (proc, KFD nodes, drop-ins); 8 the exit-70 variants from captured values; 9 GPUs gfxgate does not
know; 17 unit files and /etc/group read as systemd and glibc read them (how values are read: in process).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.doctor.machines import machine
from tests.cli.test_replays import replay
from tests.host.captured import capture_state, env, root, work  # noqa: F401 - fixtures

KFD1 = "sys/class/kfd/kfd/topology/nodes/1/properties"


def doctor(exe, work, env, root, *args, code=0, fmt="json", timeout=60):
    run = replay(
        "doctor",
        exe,
        ["doctor", "--root", str(root), "--format", fmt, *args],
        cwd=work,
        code=code,
        env=env,
        timeout=timeout,
    )
    return json.loads(run.stdout) if fmt == "json" and code == 0 else run


def _replace(path: Path, make) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)


# -- 1. stat.json ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "sparse-3g"])
def test_1_a_stat_json_that_is_no_small_file_is_a_note(gfxgate_exe, work, env, root, kind):
    """Issue 41 item 1: a link to /dev/zero, a FIFO or a 3 GB sparse file as stat.json is not read."""
    manifest = root / ".gfxgate-doctor/stat.json"
    makers = {
        "dev-zero": lambda p: p.symlink_to("/dev/zero"),
        "fifo": lambda p: os.mkfifo(p),
        "sparse-3g": lambda p: os.truncate(p.open("wb").name, 3 << 30),
    }
    _replace(manifest, makers[kind])
    data = doctor(gfxgate_exe, work, env, root)
    assert data["gpus"][0]["target"] == "gfx900"
    if kind in ("fifo", "sparse-3g"):
        assert any("stat.json" in n for n in data["notes"]), data["notes"]


# -- 2. a FIFO wherever a file is read ------------------------------------------------------------------------
FIFO_AT = [
    KFD1,
    "etc/group",
    "etc/systemd/system/ollama.service.d/override.conf",
    "etc/ollama.env",
    "usr/share/libdrm/amdgpu.ids",
    "proc/4242/comm",
    "opt/rocm-6.0.0/.info/version",
]


@pytest.mark.parametrize("where", FIFO_AT)
def test_2_a_fifo_is_never_opened_for_reading(gfxgate_exe, work, env, root, where):
    """Issue 41 item 2: ``tar -xzf`` makes FIFOs for any user; each read place with a FIFO ends, with a note."""
    unit = root / "etc/systemd/system/ollama.service"
    unit.write_text(unit.read_text().replace("[Service]\n", "[Service]\nEnvironmentFile=-/etc/ollama.env\n"))
    (root / "opt/rocm-6.0.0/.info").mkdir(parents=True)
    _replace(root / where, lambda p: os.mkfifo(p))
    data = doctor(gfxgate_exe, work, env, root, timeout=30)
    assert any("FIFO" in n for n in data["notes"]), data["notes"]


# -- 3. links out of the root ---------------------------------------------------------------------------------
@pytest.fixture()
def pinned(work) -> Path:
    """A capture at the pinned release (v0.17.5): its matrix scans the installed GPU code."""
    return machine(work / "p", "vega56", version="0.17.5")


def test_3_a_rocblas_folder_linked_to_slash_reads_the_capture_not_the_host(gfxgate_exe, work, env, pinned):
    """Issue 41 item 3: a bundled rocBLAS folder that is a link to ``/`` is the capture's own root (a chroot), so
    doctor never walks the host (63-90 s on main) and cites no host file."""
    root = pinned
    blas = root / "usr/local/lib/ollama/rocm/rocblas/library"
    for f in blas.iterdir():
        f.unlink()
    blas.rmdir()
    blas.symlink_to("/")
    data = doctor(gfxgate_exe, work, env, root)
    assert str(work) not in json.dumps(data["targets"])  # every row cites machine paths


def test_3_dev_kfd_linked_to_dev_null_is_not_an_open_device(gfxgate_exe, work, env, root):
    """Issue 41 item 3: ``/dev/kfd -> /dev/null`` (no manifest entry) made access "ok" on main: the link is read
    inside the capture, where /dev/null is not."""
    manifest = json.loads((root / ".gfxgate-doctor/stat.json").read_text())
    del manifest["stat"]["/dev/kfd"]
    (root / ".gfxgate-doctor/stat.json").write_text(json.dumps(manifest))
    (root / "dev").mkdir()
    (root / "dev/kfd").symlink_to("/dev/null")
    data = doctor(gfxgate_exe, work, env, root)
    kfd = next(n for n in data["nodes"] if n["path"] == "/dev/kfd")
    assert kfd["present"] is False


def test_3_a_linked_library_and_group_file_are_read_inside_the_capture(gfxgate_exe, work, env, pinned):
    """Issue 41 item 3: ``libggml-hip.so -> /usr/bin/env`` and ``etc/group -> /etc/group`` name the capture's
    files, never the host's: the report cites no host path."""
    root = pinned
    (root / "usr/local/lib/ollama/rocm/libggml-hip.so").symlink_to("/usr/bin/env")
    (root / "etc/group").rename(root / "etc/group.real")
    (root / "etc/group").symlink_to("/etc/group.real")
    data = doctor(gfxgate_exe, work, env, root)
    assert "render" in json.dumps(data["access"]) or data["access"]
    assert "/usr/bin/env" not in json.dumps(data)


# -- 6. many files ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["comm", "kfd", "dropins"])
def test_6_thousands_of_sparse_files_stay_under_the_memory_bound(gfxgate_exe, work, env, tmp_path, what):
    """Issue 41 item 6: 2,000 sparse /proc/N/comm files (2 GB on main), 1,500 KFD nodes or drop-ins of 1 MiB each.

    The capture lies beside the watched working folder: the harness would hash its 2 GB of zeros twice (6 s of
    CPU, the product's own run is 0.4 s). That the capture is unchanged is asserted here instead, as strongly: the
    same entries with the same type, inode, mode, size and mtime; each sparse file still without a data block (so
    still all zeros, as written), every other file with the same content hash."""
    root = machine(tmp_path / "many", "vega56", version="0.12.11")
    count = 2000 if what == "comm" else 1500
    for n in range(count):
        if what == "comm":
            path = root / f"proc/{1000 + n}/comm"
        elif what == "kfd":
            path = root / f"sys/class/kfd/kfd/topology/nodes/{2 + n}/properties"
        else:
            path = root / f"etc/systemd/system/ollama.service.d/{n:05d}.conf"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            handle.truncate(1 << 20)
    before = capture_state(root)
    assert sum(1 for v in before.values() if v[-1] == "sparse") == count
    doctor(gfxgate_exe, work, env, root, timeout=60)
    assert capture_state(root) == before


# -- 8. exit 70 from captured values -----------------------------------------------------------------------------
# the shapes that were exit 70 on main (a shape main read without error, such as a list as the whole file, is
# checked in-process by check_manifest's own test below)
MANIFESTS = [
    {"stat": {"/dev/kfd": 5}},
    {"stat": {"/dev/kfd": {"mode": 660, "uid": 0, "gid": 993}}},
    {"stat": {"/dev/kfd": {"mode": "zz", "uid": 0, "gid": 993, "kind": "char"}}},
    {"stat": {"/dev/kfd": {"mode": None, "uid": 0, "gid": 993, "kind": "char"}}},
    {"stat": {"/dev/kfd": {"mode": "0660", "uid": 0, "gid": [], "kind": "char"}}},
    {"stat": {"/dev/kfd": {"mode": "0660", "uid": 0, "gid": {"a": 1}, "kind": "char"}}},
    {"probes": []},
    {"probes": {"ollama --version": 5}},
    {"probes": {"ollama --version": ["x"]}},
    {"logs": "x"},
    {"logs": ["a\u0000b"]},
]


@pytest.mark.parametrize("manifest", MANIFESTS, ids=range(len(MANIFESTS)))
def test_8_a_stat_json_of_any_shape_is_no_internal_error(gfxgate_exe, work, env, root, manifest):
    """Issue 41 item 8: the stat.json shapes (and a NUL in a captured log name) that were exit 70 on main."""
    (root / ".gfxgate-doctor/stat.json").write_text(json.dumps(manifest))
    doctor(gfxgate_exe, work, env, root)


@pytest.mark.parametrize("gid", ["\u00b2", "9" * 5000])
def test_8_a_gid_that_is_no_ascii_number_is_skipped(gfxgate_exe, work, env, root, gid):
    """Issue 41 item 8: ``int()`` after ``str.isdigit()`` (``²``, over 4,300 digits) was exit 70."""
    (root / "etc/group").write_text(f"render:x:{gid}:ollama\n" + (root / "etc/group").read_text())
    (root / "etc/passwd").write_text((root / "etc/passwd").read_text() + f"weird:x:{gid}:{gid}::/:/bin/false\n")
    doctor(gfxgate_exe, work, env, root, "--format", "md", fmt="md")


def test_8_vram_of_ten_to_the_400_is_no_overflow(gfxgate_exe, work, env, root):
    """Issue 41 item 8: VRAM/GTT of 10**400 (``_gib`` OverflowError on main)."""
    for name in ("mem_info_vram_total", "mem_info_gtt_total"):
        (root / f"sys/class/drm/renderD128/device/{name}").write_text("1" + "0" * 400 + "\n")
    doctor(gfxgate_exe, work, env, root, fmt="md")


def test_8_a_rocblas_folder_1900_deep_is_no_recursion_error(gfxgate_exe, work, env, tmp_path):
    """Issue 41 item 8: a rocBLAS folder 1,900 deep (``Path.rglob`` RecursionError in --collect on main). The capture
    lies beside the watched folder (the harness's own os.walk would recurse as deep)."""
    root = machine(tmp_path / "deep", "vega56", version="0.12.11")
    deep = root / "usr/local/lib/ollama/rocm/rocblas/library"
    fd = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(1900):  # relative mkdir from a descriptor: no path longer than PATH_MAX is ever named
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    try:
        replay(
            "doctor-collect",
            gfxgate_exe,
            ["doctor", "--root", str(root), "--collect", "out.tar.gz"],
            cwd=work,
            code=0,
            env=env,
            outputs=("out.tar.gz",),
        )
    finally:
        _remove_chain(deep, 1900)


def _remove_chain(folder: Path, depth: int) -> None:
    """Remove a chain of ``d`` folders ``depth`` deep without recursion (shutil.rmtree recurses)."""
    fds = [os.open(folder, os.O_RDONLY)]
    try:
        for _ in range(depth - 1):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        while fds:
            fd = fds.pop()
            os.rmdir("d", dir_fd=fd)
            os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


# -- 9. GPUs gfxgate does not know ----------------------------------------------------------------------------------
@pytest.mark.parametrize("version,name", [(120500, "gfx1250"), (70000, "gfx700")])
def test_9_an_unknown_gpu_is_reported_and_a_known_one_beside_it_keeps_its_report(
    gfxgate_exe, work, env, root, version, name
):
    """Issue 41 item 9: exit 2 on main for the whole report; now a note for the new GPU and the known GPU's rows."""
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "2").mkdir()
    (nodes / "2/properties").write_text(
        (nodes / "1/properties")
        .read_text()
        .replace("gfx_target_version 90000", f"gfx_target_version {version}")
        .replace("drm_render_minor 128", "drm_render_minor 129")
    )
    data = doctor(gfxgate_exe, work, env, root)
    targets = {t["target"]: t for t in data["targets"]}
    assert set(targets) == {"gfx900", name}
    assert targets["gfx900"]["rows"] and targets["gfx900"]["backends"]
    assert any(name in n for n in targets[name]["notes"])


# -- 17. unit files and /etc/group as systemd and glibc read them ----------------------------------------------------
def _in_process(cli, root) -> dict:
    """Item 17 is how values are read, not a hostile input's bounds: doctor in process (tests/inprocess.py), exit 0,
    no traceback and only ``gfxgate:`` lines on stderr, as the replay asserts; the replays above keep the script's
    bounds (a process per case was 0.25 s of CPU, most of it the interpreter's start)."""
    done = cli("doctor", "--root", str(root), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert all(line.startswith(("gfxgate: ", "  ")) for line in done.stderr.splitlines()), done.stderr
    return json.loads(done.stdout)


def _settings(cli, root, service: str, envfile: str | None = None) -> dict:
    (root / "etc/systemd/system/ollama.service").write_text(service)
    if envfile is not None:
        (root / "etc/o.env").write_text(envfile)
    data = _in_process(cli, root)
    return {s["name"]: s["value"] for s in data["unit"]["environment"]} | {"problems": data["unit"]["problems"]}


@pytest.mark.parametrize(
    "line,value",
    [
        ('Environment="HSA_OVERRIDE_GFX_VERSION=10\\x2e3.0"', "10.3.0"),  # a C escape (EXTRACT_CUNESCAPE)
        (
            "Environment=HSA_OVERRIDE_GFX_VERSION=9.0.0 \\\n# a comment inside the continuation\n HIP_VISIBLE_DEVICES=1",
            "9.0.0",
        ),
        ("Environment=HSA_OVERRIDE_GFX_VERSION=10.%%3.0", "10.%3.0"),  # %% is a percent sign
    ],
)
def test_17_environment_values_as_systemd_reads_them(gfxgate_cli, root, line, value):
    """Issue 41 item 17: conf-parser.c's continuations (a comment line inside is skipped) and extract_first_word's
    C escapes, and ``%%``; main read ``10\\x2e3.0``, dropped HIP_VISIBLE_DEVICES after the comment, kept ``%%``."""
    got = _settings(gfxgate_cli, root, f"[Service]\nUser=ollama\n{line}\n")
    assert got["HSA_OVERRIDE_GFX_VERSION"] == value
    if "HIP_VISIBLE_DEVICES" in line:
        assert got["HIP_VISIBLE_DEVICES"] == "1"


def test_17_a_bad_quote_keeps_the_words_before_it_as_systemd_does(gfxgate_cli, root):
    """systemd applies the words before an unbalanced quote and ignores the rest (main dropped the whole line)."""
    got = _settings(
        gfxgate_cli, root, '[Service]\nEnvironment=HSA_OVERRIDE_GFX_VERSION=9.0.0 ROCR_VISIBLE_DEVICES="0\n'
    )
    assert got["HSA_OVERRIDE_GFX_VERSION"] == "9.0.0" and "ROCR_VISIBLE_DEVICES" not in got and got["problems"]


def test_17_environment_file_values_as_systemd_parse_env_file_reads_them(gfxgate_cli, root):
    """A comment's trailing backslash continues it; a double-quoted value spans a line continuation (main read
    ``"0,\\`` and HSA_OVERRIDE_GFX_VERSION=1)."""
    got = _settings(
        gfxgate_cli,
        root,
        "[Service]\nEnvironmentFile=/etc/o.env\n",
        '# c \\\nHSA_OVERRIDE_GFX_VERSION=1\nHIP_VISIBLE_DEVICES="0,\\\n1"\nROCR_VISIBLE_DEVICES=  2 3  \n',
    )
    assert "HSA_OVERRIDE_GFX_VERSION" not in got
    assert got["HIP_VISIBLE_DEVICES"] == "0,1" and got["ROCR_VISIBLE_DEVICES"] == "2 3"


def test_17_etc_group_as_glibc_reads_it(gfxgate_cli, root):
    """The first entry of a gid names it (main: the last), so the device's group is ``render``."""
    (root / "etc/group").write_text((root / "etc/group").read_text() + "video2:x:993:\n")
    data = _in_process(gfxgate_cli, root)
    assert next(n for n in data["nodes"] if n["path"] == "/dev/kfd")["group"] == "render"


def test_17_check_manifest_keeps_only_the_written_shapes():
    from gfxgate.host.rootfs import check_manifest

    assert check_manifest([]) == ({}, 1)
    good, dropped = check_manifest(
        {
            "stat": {
                "/dev/kfd": {"mode": "660", "uid": 0, "gid": 5, "kind": "char"},
                "/x": {"mode": "0660", "uid": True, "gid": 5, "kind": "char"},
            },
            "user": "a:b",
            "logs": [".x", "ok"],
        }
    )
    assert good["stat"] == {"/dev/kfd": {"mode": "0660", "uid": 0, "gid": 5, "kind": "char"}}
    assert good["logs"] == ["ok"] and "user" not in good and dropped == 3
