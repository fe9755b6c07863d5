"""Code object headers decoded from real clang-19 output, and the mach table checked against LLVM data."""

from __future__ import annotations

import pytest

from gfxgate.artifacts import elf
from gfxgate.artifacts.model import CODE_OBJECT, IN_FILE
from gfxgate.artifacts.scan import scan_file


# rules/targets.yaml entries newer than LLVM 19 (clang-19 does not know them): checked by their mach value only
AFTER_LLVM19 = {"gfx950", "gfx1153", "gfx9-4-generic"}


def test_mach_table_from_targets_yaml_agrees_with_llvm(clang19, tmp_path):
    """Every processor of rules/targets.yaml (the ELF decoder's only table) assembled by clang-19: its e_flags
    decode to that name, and xnack / sramecc read "any" exactly for the processors listed with the feature."""
    import subprocess

    table = elf.mach_table()
    assert len(table.names) == len(table.machs) and {"gfx600", "gfx900", "gfx9-generic"} <= set(table.machs)
    empty = tmp_path / "empty.s"
    empty.write_text("")
    unknown = set()
    for name, mach in table.machs.items():
        out = tmp_path / f"{name}.o"
        done = subprocess.run(
            [
                clang19,
                "-target",
                "amdgcn-amd-amdhsa",
                f"-mcpu={name}",
                "-mcode-object-version=6",
                "-c",
                str(empty),
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            unknown.add(name)
            continue
        hdr = elf.code_object_header(elf.Blob(out.read_bytes()))
        assert (hdr.processor, hdr.mach) == (name, mach), name
        assert (hdr.xnack == "any") == (name in table.xnack), name
        assert (hdr.sramecc == "any") == (name in table.sramecc), name
    assert unknown == AFTER_LLVM19


def test_unknown_mach_prints_as_hex():
    assert elf.mach_name(0x7E) == "mach 0x7e"


@pytest.mark.parametrize(
    "mcpu, extra, target, version",
    [
        ("gfx803", (), "gfx803", 5),
        ("gfx900", (), "gfx900", 5),
        ("gfx900:xnack-", (), "gfx900:xnack-", 5),
        ("gfx906:sramecc+:xnack-", (), "gfx906:sramecc+:xnack-", 5),
        ("gfx90a:xnack+", ("-mcode-object-version=4",), "gfx90a:xnack+", 4),
        ("gfx1030", (), "gfx1030", 5),
        ("gfx1100", (), "gfx1100", 5),
        ("gfx9-generic", ("-mcode-object-version=6",), "gfx9-generic", 6),
        ("gfx10-3-generic", ("-mcode-object-version=6",), "gfx10-3-generic", 6),
    ],
)
def test_clang_code_objects_decode(built, mcpu, extra, target, version):
    path = built.code_object(mcpu, *extra)
    report = scan_file(path, kernels=True)
    assert report.kind == CODE_OBJECT and not report.errors
    (co,) = report.code_objects
    assert (co.target, co.code_object_version, co.container, co.offset) == (target, version, IN_FILE, 0)
    assert co.generic_version == (1 if "generic" in mcpu else None)
    assert co.kernels == ("add", "scale")
    # listing a standalone code object reads its 64-byte header (+ notes with --kernels), never the whole file
    assert scan_file(path).bytes_read == elf.EHDR_SIZE * 2


def test_v4_feature_encoding_any_on_off(built):
    """xnack 'any' (no setting) leaves the target bare; the flag bits say 'any', not 'unsupported'."""
    report = scan_file(built.code_object("gfx90a", "-mcode-object-version=4"))
    (co,) = report.code_objects
    blob = elf.Blob(built.code_object("gfx90a", "-mcode-object-version=4").read_bytes())
    header = elf.code_object_header(blob)
    assert (header.xnack, header.sramecc) == ("any", "any")
    assert co.target == "gfx90a"


def test_v2_isa_note_decoding():
    # NT_AMD_HSA_ISA_VERSION major.minor.stepping spellings of code object v2 (AMDGPUUsage.rst)
    assert elf._v2_processor(9, 0, 0) == ("gfx900", "-", None)
    assert elf._v2_processor(9, 0, 1) == ("gfx900", "+", None)
    assert elf._v2_processor(8, 0, 3) == ("gfx803", None, None)
    assert elf._v2_processor(9, 0, 6) == ("gfx906", "-", "-")
    assert elf._v2_processor(200, 0, 0)[0] == "isa 200.0.0"


def test_not_amdgpu_is_an_error(built):
    so = built.hip_so("libplain.so")
    with pytest.raises(elf.ArtifactFormatError, match="not an AMDGPU ELF"):
        elf.code_object_header(elf.Blob(so.read_bytes()))
