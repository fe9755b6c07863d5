"""``doctor --collect OUT.tar.gz``: exactly what doctor read, so ``doctor --root`` replays it on another machine.

Text files as doctor kept them (unit files and environment files with only the GPU variables; other assignments are
replaced by a comment on the same line, so every ``file:line`` stays right), the GPU code files the artifacts
scanner read (each up to 16 MiB; a larger one is listed in the manifest, not copied), and ``.gfxgate-doctor/stat.json``:
device modes and groups, the probes' output, the invoking user. Never a model, never another variable.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from gfxgate.host.rootfs import MANIFEST

MAX_BINARY = 16 << 20


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def write(out: Path, report, fs) -> int:
    from gfxgate.errors import UsageError

    manifest = fs.manifest()
    omitted: list[str] = []
    count = 0
    buffer = io.BytesIO()  # written whole through fsio (atomically, a FIFO or device in place) when complete
    try:
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for path, data in fs.read.items():
                _add(tar, path, data)
                count += 1
            for path in report.installs.gpu_code_files():
                real = fs.host(path)
                files = sorted(p for p in real.rglob("*") if p.is_file()) if real.is_dir() else [real]
                for file in files:
                    rel = "/" + str(file.relative_to(fs.host("/")))
                    if file.stat().st_size > MAX_BINARY:
                        omitted.append(rel)
                        continue
                    _add(tar, rel, file.read_bytes())
                    count += 1
            for path in ([i.binary for i in report.installs.ollama if i.binary] + list(report.installs.llama_server)):
                _add(tar, path, b"")  # where it is installed, not the program: a captured binary is never run
            for folder in [r.path for i in report.installs.ollama for r in i.runners]:
                for name in fs.listdir(folder):
                    if name.startswith("libggml") and not fs.host(f"{folder}/{name}").is_dir():
                        rel = f"{folder}/{name}"
                        if rel.lstrip("/") not in tar.getnames():
                            _add(tar, rel, b"")
            manifest["logs"] = []
            for n, log in enumerate(p for p in report.logs if p != "-"):
                name = f"{n}-{Path(log).name}"
                with open(log, "rb") as handle:  # read as diagnose read it (same bound); only the log, never a model
                    _add(tar, f"{MANIFEST}/logs/{name}", handle.read(MAX_BINARY))
                manifest["logs"].append(name)
                count += 1
            manifest["omitted"] = omitted
            _add(tar, f"{MANIFEST}/stat.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
    except OSError as exc:
        raise UsageError(f"--collect {out}: {exc.strerror or exc}") from None
    from gfxgate.fsio import write_bytes_atomic

    write_bytes_atomic(out, buffer.getvalue())
    return count + 1
