"""`gfxgate artifacts` on a system library folder (issue 29): hundreds of symbolic links to files already scanned are
one line in md and text, not one each; the JSON still lists every one."""

from __future__ import annotations

import json
import os


def test_aliases_are_counted_not_listed(gfxgate_cli, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libreal.so.1.2").write_bytes(b"\x7fELF" + b"\0" * 60)  # not a valid ELF: scanned, an error entry
    for i in range(40):
        os.symlink("libreal.so.1.2", lib / f"libreal.so.{i}")
    (lib / "sub").mkdir()
    os.symlink("..", lib / "sub" / "loop")
    run = lambda fmt: gfxgate_cli("artifacts", str(lib), "--format", fmt, timeout=60)
    md, text, data = run("md").stdout, run("text").stdout, json.loads(run("json").stdout)
    assert "same file as" not in md and "same file as" not in text
    assert "41 other name(s) of files or folders already scanned" in md
    assert "41 other name(s) of files or folders already scanned" in text
    skipped = [f for f in data["files"] if f.get("skipped")]
    assert len(skipped) == 41 and sum("same file as" in f["skipped"] for f in skipped) == 40
