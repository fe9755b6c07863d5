"""Benchmark: cold partial clone (--filter=blob:none) vs full clone of a local ollama mirror, then a cold live scan.

    GFXGATE_BENCH_MIRROR=<path to an ollama clone> python benchmarks/bench_clone.py

Both clones go through the file:// transport (a real upload-pack, as with a remote), in the same run.
Transferred bytes are measured as the size of the received pack. The baseline is a full clone; when the mirror
cannot serve one (snapshots of public repositories lack their largest blobs, so upload-pack refuses), the
baseline is the mirror's own packed object store — what a full clone would receive, minus the missing blobs,
which makes the comparison conservative.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = dict(os.environ)


def pack_bytes(git_dir: Path) -> int:
    return sum(p.stat().st_size for p in (git_dir / "objects").rglob("*") if p.is_file())


def clone(url: str, dest: Path, *extra: str) -> tuple[float, int]:
    start = time.perf_counter()
    upload_pack = "git -c uploadpack.allowFilter=true -c safe.directory=* upload-pack"
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--no-local", "--upload-pack", upload_pack, *extra, url, str(dest)],
        check=True,
        env=ENV,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start, pack_bytes(dest)


def main() -> None:
    mirror = os.environ.get("GFXGATE_BENCH_MIRROR")
    if not mirror:
        sys.exit("set GFXGATE_BENCH_MIRROR to a local ollama clone")
    url = Path(mirror).resolve().as_uri()
    work = Path(tempfile.mkdtemp(prefix="gfxgate-bench-"))
    # the local mirror plays the remote: let its upload-pack serve filters (as hosting services do)
    config = work / "gitconfig"
    config.write_text("[uploadpack]\n\tallowFilter = true\n[safe]\n\tdirectory = *\n")
    ENV["GIT_CONFIG_GLOBAL"] = str(config)
    try:
        try:
            full_t, full_b = clone(url, work / "full.git")
            label = "full clone"
        except subprocess.CalledProcessError:
            full_t, full_b, label = float("nan"), pack_bytes(Path(mirror)), "mirror objects"
        part_t, part_b = clone(url, work / "partial.git", "--filter=blob:none")
        print(f"{label:14}: {full_b / 1e6:8.1f} MB in {full_t:6.2f} s")
        print(
            f"partial clone : {part_b / 1e6:8.1f} MB in {part_t:6.2f} s  ({100 * part_b / full_b:.0f} % of full; target < 50 %)"
        )
        cache = work / "cache"
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gfxgate",
                "scan",
                "-t",
                "gfx900",
                "--format",
                "json",
                "--live",
                "--source",
                f"ollama={url}",
            ],
            check=True,
            capture_output=True,
            env={**ENV, "GFXGATE_CACHE_DIR": str(cache)},
        )
        cold = time.perf_counter() - start
        blobs = pack_bytes(next((cache / "repos").glob("ollama-*.git")))
        print(f"cold live scan (partial clone + lazy blobs): {cold:6.2f} s, cache {blobs / 1e6:.1f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
