"""Issue 13, concurrency: cold live scans sharing a cache, and temporary clones orphaned by SIGKILL.

Real `gfxgate scan --live` processes (the installed console script) clone the fixture repositories through
file:// URLs, so the cache clones are gfxgate's own partial clones, as with GitHub.
"""

from __future__ import annotations

import os
import subprocess

from gfxgate.sources.gitrepo import GitRepo


def live_env(upstream, cache) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    env["GFXGATE_CACHE_DIR"] = str(cache)
    env["GFXGATE_SOURCE_OLLAMA"] = (upstream / "ollama").as_uri()
    env["GFXGATE_SOURCE_LLAMA_CPP"] = (upstream / "llama.cpp").as_uri()
    env["GFXGATE_SOURCE_ROCM_DOCS"] = (upstream / "rocm").as_uri()
    env["GFXGATE_SOURCE_CLR"] = (upstream / "clr").as_uri()
    env["GFXGATE_SOURCE_ROCBLAS"] = (upstream / "rocblas").as_uri()
    return env


SCAN = ["scan", "--target", "gfx900", "--live", "--format", "json"]


def test_two_cold_live_scans_share_one_cache(gfxgate_exe, upstream, tmp_path):
    env = live_env(upstream, tmp_path / "cache")
    procs = [
        subprocess.Popen([gfxgate_exe, *SCAN], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    assert results[0][0] == results[1][0] == results[2][0]
    repos = tmp_path / "cache" / "repos"
    assert not [p.name for p in repos.iterdir() if p.name.startswith(".")]  # no temporary clone left


def test_a_temporary_clone_orphaned_by_sigkill_is_removed(gfxgate_exe, upstream, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(cache))
    git_dir = GitRepo("ollama", (upstream / "ollama").as_uri(), offline=True).git_dir
    orphan = git_dir.parent / f".{git_dir.name}.k1ll3d"  # what mkdtemp left when its cloner got SIGKILL
    (orphan / "objects").mkdir(parents=True)
    (orphan / "objects" / "half-written").write_bytes(b"\0" * 1024)
    proc = subprocess.run(
        [gfxgate_exe, *SCAN], env=live_env(upstream, cache), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert not orphan.exists()
    assert git_dir.is_dir()


def test_a_killed_cloner_leaves_nothing_for_good(gfxgate_exe, upstream, tmp_path):
    """kill -9 mid-clone (best effort timing), then a normal scan: no temporary clone survives."""
    import time

    env = live_env(upstream, tmp_path / "cache")
    victim = subprocess.Popen([gfxgate_exe, *SCAN], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    repos = tmp_path / "cache" / "repos"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (repos.is_dir() and any(p.name.startswith(".") for p in repos.iterdir())):
        time.sleep(0.005)
    victim.kill()
    victim.wait()
    proc = subprocess.run([gfxgate_exe, *SCAN], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not [p.name for p in repos.iterdir() if p.name.startswith(".") and p.is_dir()]
