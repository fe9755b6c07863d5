"""Turn what the device run brought back (study.tar.gz, unpacked: sw/) into the committed inputs of samples/h200/.

    python3 tools/gpu-study/import.py SW_DIR [SAMPLES_DIR]

Writes SAMPLES_DIR/h200/ (default samples/h200/):
  sweep.jsonl   the device's worklog, byte for byte (its paths are the device's copy of the checkout)
  logs/RUN.log  each first-repeat run's server log, trimmed to the lines the sweep and diagnose read
                (gfxgate.sweep.llamaserver.trim_log); the other repeats' logs are not kept
  device.txt    llama-server --version and --list-devices, the build's CMake settings, the model, nvidia-smi
Then `gfxgate samples` renders sweep-report.md/.json and the diagnose samples from them (checked by --check).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gfxgate.sweep.llamaserver import trim_log


def main(argv: list[str]) -> int:
    sw = Path(argv[0])
    out = Path(argv[1] if len(argv) > 1 else "samples") / "h200"
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sw / "sweep.jsonl", out / "sweep.jsonl")
    kept = 0
    for line in (sw / "sweep.jsonl").read_text(encoding="utf-8").splitlines():
        run = json.loads(line)
        if run.get("repeat") != 0:
            continue
        raw = sw / "sweep.jsonl.logs" / f"{run['run_id']}.log"
        text = raw.read_text(encoding="utf-8", errors="replace").splitlines()
        (logs / raw.name).write_text("\n".join(trim_log(text)) + "\n", encoding="utf-8")
        kept += 1
    parts = []
    for name, title in (("version.txt", "llama-server --version"), ("list-devices.txt", "llama-server --list-devices"),
                        ("cmake-cache.txt", "CMakeCache.txt (CUDA, Vulkan, commit)"), ("model.txt", "the model"),
                        ("nvidia-smi.txt", "nvidia-smi after the run")):
        path = sw / name
        if path.is_file():
            parts.append(f"## {title}\n\n" + path.read_text(encoding="utf-8", errors="replace").rstrip() + "\n")
    (out / "device.txt").write_text("\n".join(parts), encoding="utf-8")
    print(f"{out}: worklog, {kept} trimmed logs, device.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
