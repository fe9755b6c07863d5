"""Turn what the device run brought back (study.tar.gz, unpacked: sw/) into the committed inputs of samples/h200/.

    python3 tools/gpu-study/import.py SW_DIR [SAMPLES_DIR]

Writes SAMPLES_DIR/h200/ (default samples/h200/):
  sweep.jsonl.zst  the device's worklog, zstandard-compressed (`zstd -d` gives it back byte for byte; run.sh with
                GPU_STUDY_WORK=/srv/gpu-study: its paths name no machine's checkout). A later call that resumed the
                committed worklog (`zstd -d` it into .devprobe/resume/sweep.jsonl) brings back the same lines first,
                then its own: the committed lines must be its prefix, else nothing is written.
  soak.jsonl.zst   the soak's worklog (one cell repeated), compressed the same way, when the device ran the soak
  logs/RUN.log  each first-repeat run's server log, and the log of every soak run that did not end ok, trimmed to
                the lines the sweep and diagnose read (gfxgate.sweep.llamaserver.trim_log); a committed log whose raw
                log this call did not bring back (a run of an earlier call) is kept; other repeats' logs are not kept
  device.txt    llama-server --version and --list-devices, the build's CMake settings, the model, nvidia-smi
Then `gfxgate samples` renders sweep-report.md/.json, soak-report.md/.json and the diagnose samples from them (checked
by --check).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import zstandard

from gfxgate.sweep.llamaserver import trim_log


def main(argv: list[str]) -> int:
    sw = Path(argv[0])
    out = Path(argv[1] if len(argv) > 1 else "samples") / "h200"
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    committed = out / "sweep.jsonl.zst"
    before = (
        zstandard.ZstdDecompressor().decompressobj().decompress(committed.read_bytes()) if committed.is_file() else b""
    )
    if before and not (sw / "sweep.jsonl").read_bytes().startswith(before):
        print(f"{sw / 'sweep.jsonl'} does not continue {committed}: nothing written", file=sys.stderr)
        return 1
    kept = 0
    for name, keep in (
        ("sweep.jsonl", lambda run: run.get("repeat") == 0),
        ("soak.jsonl", lambda run: run.get("repeat") == 0 or run.get("outcome") != "ok"),
    ):
        if not (sw / name).is_file():
            continue
        # the worklog, compressed (a 1.4 MB soak is 30 KB): gfxgate's worklog reader inflates it within its bound
        (out / f"{name}.zst").write_bytes(zstandard.ZstdCompressor(level=19).compress((sw / name).read_bytes()))
        for line in (sw / name).read_text(encoding="utf-8").splitlines():
            run = json.loads(line)
            if not keep(run):
                continue
            raw = sw / f"{name}.logs" / f"{run['run_id']}.log"
            if not raw.is_file() and (logs / raw.name).is_file():
                continue  # a run of an earlier call: its trimmed log is committed already
            text = raw.read_text(encoding="utf-8", errors="replace").splitlines()
            (logs / raw.name).write_text("\n".join(trim_log(text)) + "\n", encoding="utf-8")
            kept += 1
    parts = []
    for name, title in (
        ("version.txt", "llama-server --version"),
        ("list-devices.txt", "llama-server --list-devices"),
        ("cmake-cache.txt", "CMakeCache.txt (CUDA, Vulkan, commit)"),
        ("model.txt", "the model"),
        ("nvidia-smi.txt", "nvidia-smi after the run"),
    ):
        path = sw / name
        if path.is_file():
            parts.append(f"## {title}\n\n" + path.read_text(encoding="utf-8", errors="replace").rstrip() + "\n")
    (out / "device.txt").write_text("\n".join(parts), encoding="utf-8")
    print(f"{out}: worklog, {kept} trimmed logs, device.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
