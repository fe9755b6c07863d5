"""A small writer of ROCm kpack archives and kpack'd host libraries, written from the spec (not from its code):
ROCm/rocm-kpack ``docs/multi_arch_packaging_with_kpack.md``, "Kpack Archive Format" and "Appendix: File Format
Specifications" — a 16-byte header (``KPAK``, u32 version, u64 TOC offset), zero padding to 64, the blob data,
then a msgpack TOC to the end of the file."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import msgpack

HIPF, HIPK = 0x48495046, 0x4B504948


def kpack(
    kernels: dict[str, dict[str, bytes]],
    *,
    scheme: str = "none",
    group: str = "test",
    family: str = "gfx110X",
    arches: list[str] | None = None,
    version: int = 1,
    toc_extra: dict | None = None,
    original_sizes: dict | None = None,
) -> bytes:
    """An archive holding ``kernels[binary][arch] = code object bytes``; ``scheme`` "none" or "zstd-per-kernel"."""
    flat = [(binary, arch, data) for binary, by_arch in kernels.items() for arch, data in by_arch.items()]
    blob_start = 64
    toc: dict = {}
    extra: dict = {}
    if scheme == "none":
        body, blobs = bytearray(), []
        for binary, arch, data in flat:
            blobs.append({"offset": blob_start + len(body), "size": len(data)})
            body += data
        extra["blobs"] = blobs
    else:
        import zstandard

        body = bytearray(struct.pack("<I", len(flat)))
        for binary, arch, data in flat:
            frame = zstandard.ZstdCompressor().compress(data)
            body += struct.pack("<I", len(frame)) + frame
        extra.update(zstd_offset=blob_start, zstd_size=len(body))
    for ordinal, (binary, arch, data) in enumerate(flat):
        size = (original_sizes or {}).get((binary, arch), len(data))
        toc.setdefault(binary, {})[arch] = {"type": "hsaco", "ordinal": ordinal, "original_size": size}
    toc_offset = blob_start + len(body)
    document = {
        "format_version": version,
        "group_name": group,
        "gfx_arch_family": family,
        "gfx_arches": arches if arches is not None else sorted({a for _, a, _ in flat}),
        "toc": toc,
        "compression_scheme": scheme,
        **extra,
        **(toc_extra or {}),
    }
    header = b"KPAK" + struct.pack("<IQ", version, toc_offset)
    return header + bytes(blob_start - len(header)) + bytes(body) + msgpack.packb(document, use_bin_type=True)


def kpacked_host(
    hip_so: Path,
    out: Path,
    kernel_name: str,
    search_paths: list[str],
    objcopy: str = "llvm-objcopy-19",
    marker: bytes | None = None,
    keep_fatbin: bool = False,
) -> Path:
    """A HIP shared object turned into a kpack'd one as the spec's steps 3.1-3.5 leave it: ``.hip_fatbin`` no
    longer in the file (SHT_NOBITS), a ``.rocm_kpack_ref`` msgpack marker added, every ``.hipFatBinSegment``
    record's magic rewritten HIPF → HIPK. (The pointer redirection of step 3.4 is left out: no reader of files
    follows it to the marker, which is found by name.)"""
    marker_file = out.with_suffix(".marker")
    marker_file.write_bytes(
        marker
        if marker is not None
        else msgpack.packb({"kernel_name": kernel_name, "kpack_search_paths": search_paths})
    )
    nobits = [] if keep_fatbin else ["--set-section-type=.hip_fatbin=8"]
    subprocess.run(
        [
            objcopy,
            f"--add-section=.rocm_kpack_ref={marker_file}",
            "--set-section-flags=.rocm_kpack_ref=readonly",
            *nobits,
            str(hip_so),
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    from gfxgate.artifacts.elf import Blob, host_elf

    data = bytearray(out.read_bytes())
    seg = host_elf(Blob(bytes(data))).section(".hipFatBinSegment")  # gfxgate's own section table reader
    assert seg is not None
    start, size = seg.offset, seg.size
    for pos in range(start, start + size, 24):
        assert struct.unpack_from("<I", data, pos)[0] == HIPF
        struct.pack_into("<I", data, pos, HIPK)
    out.write_bytes(bytes(data))
    return out
