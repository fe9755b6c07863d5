"""Issue 28, defects 10–17 and the "also seen" items: hostile sources, caches, data and JSON inputs.

Every reproduction runs through the installed console script with the harness of issue 13
(tests/cli/test_replays.py ``replay``: the documented exit code, one error line, under 5 s of CPU and
512 MB of peak RSS of the gfxgate process measured with ``os.wait4``, nothing in the working folder changed but
the named outputs). Large files are sparse (``truncate``): they cost no disk, but reading one costs its size in
memory, which is what the defects did.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.conftest import shared_build
from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories
from tests.cli.test_replays import SCAN, _rules, env, replay, work  # noqa: F401 - env, work: fixtures

GIB = 1 << 30


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


# A clone here is made with --no-local: a local clone hardlinks the upstream fixture's object files, and git on the
# other xdist worker, writing an object these files already hold, refreshes its mtime (git's "freshen") in this
# test's watched folder while the replay runs.
def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


# -- 13. sizes checked before the read ------------------------------------------------------------------
def test_13_check_with_a_huge_pins_file_is_refused_before_the_read(gfxgate_exe, work, env):
    """`check` with a 1.5 GB pins.toml: 1.5 GB of RSS before the "at most 1048576 bytes" refusal."""
    git(work, "init", "-q")
    _rules(work)
    git(work, "add", "rules")
    git(work, "commit", "-q", "-m", "base")
    sparse(work / "rules" / "pins.toml", 3 * GIB // 2)
    replay(
        "13 check, 1.5 GB pins.toml",
        gfxgate_exe,
        ["check", "--base-ref", "HEAD", "-t", "gfx900", "--offline", "--rules", "rules", "--pins", "rules/pins.toml"],
        cwd=work,
        env=env,
        code=3,
        error="pins.toml: 1610612736 bytes; a pins or rules file may have at most 1048576",
    )


def test_13_scan_rules_with_a_huge_gate_file(gfxgate_exe, work, env):
    """`scan --rules DIR` with a 1 GB gate file: 3.0 GB of RSS before the refusal."""
    rules = _rules(work)
    sparse(rules / "gates" / "discovery.yaml", GIB)
    replay(
        "13 scan --rules, 1 GB gate file",
        gfxgate_exe,
        [*SCAN, "--rules", "rules"],
        cwd=work,
        env=env,
        code=3,
        error="discovery.yaml: 1073741824 bytes; a rules file may have at most 1048576",
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_13_a_rules_file_that_is_not_a_regular_file(gfxgate_exe, work, env, kind):
    """A FIFO would block the read forever, /dev/zero never ends: one line, exit 3."""
    rules = _rules(work)
    target = rules / "gates" / "discovery.yaml"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    replay(
        f"13 scan --rules, gate file is {kind}",
        gfxgate_exe,
        [*SCAN, "--rules", "rules"],
        cwd=work,
        env=env,
        code=3,
        error="not a regular file",
    )


# -- 10. blob bomb ----------------------------------------------------------------------------------------
def loose_zero_blob(size: int, chunk: int = 1 << 20) -> tuple[str, bytes]:
    """A blob of ``size`` zero bytes in git's loose-object format (zlib of "blob <size>\\0" and the bytes, named by
    its SHA-1): its id and its file's bytes.

    The deflate stream is flushed in full after the header and after each chunk of zeros, so every chunk's compressed
    bytes are the same (a full flush forgets the history): one chunk is compressed and repeated, then the final empty
    block and the Adler-32 of the whole (for zeros, A stays that of the header and B grows by A a byte). 0.9 s of CPU
    for 1 GiB, mostly the SHA-1, where compressing every chunk took 3.4 s (and `git hash-object` 6-15 s)."""
    header = f"blob {size}\0".encode()
    deflate = zlib.compressobj(1)  # git's own loose compression level
    parts = [deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)]
    digest, zeros = hashlib.sha1(header), bytes(chunk)
    full, rest = divmod(size, chunk)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert block == deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every chunk
    parts += [block] * full
    for _ in range(full):
        digest.update(zeros)
    if rest:
        parts.append(deflate.compress(bytes(rest)) + deflate.flush(zlib.Z_FULL_FLUSH))
        digest.update(bytes(rest))
    adler = zlib.adler32(header)
    a, b = adler & 0xFFFF, (adler >> 16) + size * (adler & 0xFFFF)
    parts.append(b"\x03\x00" + ((b % 65521) << 16 | a).to_bytes(4, "big"))  # final empty fixed block, Adler-32
    return digest.hexdigest(), b"".join(parts)


@pytest.fixture(scope="session")
def bomb(tmp_path_factory) -> tuple[str, Path]:
    """A 1 GiB blob of zeros as one loose object (4.5 MB on disk): its id and its file, to copy into repositories
    (built once per test run: tests/conftest.py shared_build)."""

    def store(root: Path, size: int) -> tuple[str, Path]:
        sha, data = loose_zero_blob(size)
        path = root / ".git" / "objects" / sha[:2] / sha[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return sha, path

    def build(root: Path) -> tuple[str, Path]:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        # the writer checked by git itself on a small blob (inflated whole, checksum and all), then the large one
        small = (3 << 20) + 7
        sha, _ = store(root, small)
        content = subprocess.run(["git", "-C", str(root), "cat-file", "blob", sha], capture_output=True, check=True)
        assert content.stdout == bytes(small)
        sha, path = store(root, 1 << 30)
        for flag, want in (("-t", "blob"), ("-s", str(1 << 30))):
            done = subprocess.run(["git", "-C", str(root), "cat-file", flag, sha], capture_output=True, text=True)
            assert done.stdout.strip() == want, done.stderr
        return sha, path

    return shared_build(tmp_path_factory, "blob-bomb", build)


def plant(repo: Path, bomb: tuple[str, Path], path: str) -> None:
    """Stage the bomb at ``path`` in ``repo`` (its object copied in: git never hashes a gigabyte again)."""
    sha, loose = bomb
    objects = Path(git(repo, "rev-parse", "--git-path", "objects").strip())
    objects = objects if objects.is_absolute() else repo / objects
    (objects / sha[:2]).mkdir(exist_ok=True)
    shutil.copyfile(loose, objects / sha[:2] / sha[2:])
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")


def live_env(env: dict, upstream: Path) -> dict:
    return {
        **env,
        "GFXGATE_SOURCE_LLAMA_CPP": str(upstream / "llama.cpp"),
        "GFXGATE_SOURCE_ROCM_DOCS": str(upstream / "rocm"),
        "GFXGATE_SOURCE_CLR": str(upstream / "clr"),
        "GFXGATE_SOURCE_ROCBLAS": str(upstream / "rocblas"),
    }


def test_10_a_blob_bomb_at_a_path_a_rule_reads_is_an_error_entry(gfxgate_exe, work, env, upstream, bomb):
    """`scan --source ollama=REPO`, a 4.6 MB repository with a 1 GiB CMakeLists.txt: 12.8 s, 2.1 GB, exit 0 before."""
    import json

    repo = work / "ollama"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("a repository with one large blob\n")
    git(repo, "add", "README.md")
    plant(repo, bomb, "CMakeLists.txt")
    git(repo, "commit", "-q", "-m", "bomb")
    git(repo, "tag", "v0.17.5")
    run = replay(
        "10 blob bomb (scan --source ollama=REPO)",
        gfxgate_exe,
        [*SCAN, "--live", "--ref", "ollama=v0.17.5", "--source", "ollama=ollama", "--format", "json"],
        cwd=work,
        env=live_env(env, upstream),
        code=0,
    )
    [layer] = [layer for layer in json.loads(run.stdout)["layers"] if layer["id"] == "cmake-filter"]
    reason = layer["cells"][0]["reason"]
    assert (
        "CMakeLists.txt at " in reason and "1073741824 bytes; gfxgate reads at most 8388608 bytes of one file" in reason
    ), reason


def test_10_a_huge_file_in_a_folder_source_is_an_error_entry(gfxgate_exe, work, env, upstream):
    """The same limit for a plain folder as the source (a sparse 1 GiB file: stat first, never read)."""
    import json

    (work / "ollama").mkdir()
    sparse(work / "ollama" / "CMakeLists.txt", GIB)
    run = replay(
        "10 1 GiB file in a folder source",
        gfxgate_exe,
        [*SCAN, "--live", "--ref", "ollama=v0.17.5", "--source", "ollama=ollama", "--format", "json"],
        cwd=work,
        env=live_env(env, upstream),
        code=0,
    )
    reasons = [c.get("reason") or "" for layer in json.loads(run.stdout)["layers"] for c in layer["cells"]]
    assert any("CMakeLists.txt in " in r and "1073741824 bytes; gfxgate reads at most" in r for r in reasons), reasons


def test_13_check_with_a_blob_bomb_as_the_base_pins_file(gfxgate_exe, work, env, bomb):
    """`check`: the base ref's pins.toml is a 1 GiB blob; git is asked its size (`cat-file -s`) first."""
    git(work, "init", "-q")
    _rules(work)
    git(work, "add", "rules")
    plant(work, bomb, "rules/pins.toml")
    git(work, "commit", "-q", "-m", "base")
    replay(
        "13 check, base pins.toml is a 1 GiB blob",
        gfxgate_exe,
        ["check", "--base-ref", "HEAD", "-t", "gfx900", "--offline", "--rules", "rules", "--pins", "rules/pins.toml"],
        cwd=work,
        env=env,
        code=3,
        error="1073741824 bytes; a pins or rules file may have at most 1048576",
    )


# -- 14. JSON inputs of diff and sweep report ------------------------------------------------------------
HOSTILE_JSON = {
    "deep": ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    "deep-under-the-decoder-limit": ('{"a": ' * 500 + "1" + "}" * 500, "nested deeper than 64 levels"),
    "huge-integer": ('{"schema_version": ' + "9" * 100_000 + "}", "an integer of more than 4300 digits"),
    "overflowing-float": ('{"schema_version": 1e999}', "number 1e999 is out of range"),
}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, gfxgate_exe) -> dict:
    import json

    folder = tmp_path_factory.mktemp("matrix")
    subprocess.run(
        [gfxgate_exe, *SCAN, "-t", "gfx1030", "--format", "json", "-o", str(folder / "m.json")],
        check=True,
        capture_output=True,
    )
    return json.loads((folder / "m.json").read_text())


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_14_diff_of_hostile_json_is_exit_6(gfxgate_exe, work, env, matrix, case):
    """`diff`: 100,000 nested arrays (RecursionError) or a 100,000-digit integer were exit 70."""
    import json

    text, needle = HOSTILE_JSON[case]
    (work / "old.json").write_text(json.dumps(matrix))
    (work / "new.json").write_text(text)
    replay(
        f"14 diff, {case}",
        gfxgate_exe,
        ["diff", "old.json", "new.json"],
        cwd=work,
        env=env,
        code=6,
        error=f"new.json: not a gfxgate gate matrix: {needle}",
    )


def test_14_diff_of_a_report_layer_without_a_targets_cell_is_exit_6(gfxgate_exe, work, env, matrix):
    """A layer that lacks the cell of one of the report's targets was a KeyError (exit 70)."""
    import json

    broken = json.loads(json.dumps(matrix))
    layer = broken["layers"][1]
    layer["cells"] = [c for c in layer["cells"] if c["target"] != "gfx1030"]
    (work / "old.json").write_text(json.dumps(matrix))
    (work / "new.json").write_text(json.dumps(broken))
    replay(
        "14 diff, a layer without a target's cell",
        gfxgate_exe,
        ["diff", "old.json", "new.json"],
        cwd=work,
        env=env,
        code=6,
        error=f"new.json: not a gfxgate gate matrix (layer {layer['id']}: no cell for target gfx1030)",
    )


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_14_sweep_report_of_a_hostile_worklog_line_is_exit_6(gfxgate_exe, work, env, case):
    text, needle = HOSTILE_JSON[case]
    (work / "w.jsonl").write_text(text + "\n")  # a complete line: not the torn tail that is skipped with a warning
    replay(
        f"14 sweep report, {case}",
        gfxgate_exe,
        ["sweep", "report", "w.jsonl"],
        cwd=work,
        env=env,
        code=6,
        error=f"w.jsonl:1: not a worklog line ({needle})",
    )


# -- 11, 12. the history facts cache ------------------------------------------------------------------------
from tests.prcheck.conftest import history_upstream  # noqa: E402,F401 - fixture: the synthetic ollama history

HISTORY = ["history", "-t", "gfx900", "--format", "json"]


@pytest.fixture()
def history_env(env, history_upstream) -> dict:
    return {**env, **{name: str(path) for name, path in history_upstream.items()}}


@pytest.fixture(scope="module")
def clean_run(gfxgate_exe, history_upstream, _cache_seed, tmp_path_factory) -> tuple[str, Path]:
    """The answer with an empty facts cache, and the cache folder the run filled (one facts file per probed commit):
    run once for the module's tests, each of which starts from a copy of that folder (``clean_history``)."""
    from tests.cacheseed import copy_into
    from tests.conftest import clean_environment

    folder = tmp_path_factory.mktemp("clean-history")
    cache, cwd = folder / "cache", folder / "work"
    cache.mkdir()
    cwd.mkdir()
    copy_into(_cache_seed, cache)  # what each test's own cache folder starts with (tests/conftest.py)
    env = {
        **{k: v for k, v in clean_environment().items() if not k.startswith("GFXGATE_")},
        "GFXGATE_CACHE_DIR": str(cache),
        "NO_COLOR": "1",  # as the env fixture (tests/cli/test_replays.py)
        **{name: str(path) for name, path in history_upstream.items()},
    }
    done = subprocess.run([gfxgate_exe, *HISTORY], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(facts_files(env)) >= 4
    return done.stdout, cache


@pytest.fixture()
def clean_history(clean_run, history_env) -> str:
    """The answer with an empty facts cache, and this test's cache folder as that run left it (a copy)."""
    stdout, filled = clean_run
    shutil.copytree(filled, history_env["GFXGATE_CACHE_DIR"], dirs_exist_ok=True)
    assert len(facts_files(history_env)) >= 4
    return stdout


def facts_files(env: dict) -> list[Path]:
    return sorted((Path(env["GFXGATE_CACHE_DIR"]) / "history-facts" / "ollama").glob("*/*.json"))


def entries_of(path: Path) -> dict:
    """The entries of a cache file: after the header line (format 2), or the whole file (format 1, before)."""
    import json

    head, _, body = path.read_bytes().partition(b"\n")
    return json.loads(body) if body else json.loads(head)


def with_checksum(entries) -> bytes:
    """A cache file as gfxgate writes one (its checksum right): only the shape check can refuse it."""
    import hashlib
    import json

    body = json.dumps(entries, sort_keys=True).encode()
    return (
        json.dumps({"format": 2, "blake2b": hashlib.blake2b(body, digest_size=32).hexdigest()}).encode() + b"\n" + body
    )


def _bogus_states(entries: dict) -> dict:
    return {k: {**v, "state": "bogus"} for k, v in entries.items()}


def _facts_a_list(entries: dict) -> dict:
    return {k: {**v, "facts": []} for k, v in entries.items()}


DAMAGE = {  # the variants: valid JSON of the wrong shape (exit 70), a "bogus" state (trusted: a wrong answer)
    "a-list": lambda entries: b"[]",
    "entry-a-string": lambda entries: __import__("json").dumps({k: "x" for k in entries}).encode(),
    "facts-a-list": lambda entries: __import__("json").dumps(_facts_a_list(entries)).encode(),
    "entry-without-state": lambda entries: (
        __import__("json").dumps({k: {"rule_id": v["rule_id"]} for k, v in entries.items()}).encode()
    ),
    "state-bogus": lambda entries: __import__("json").dumps(_bogus_states(entries)).encode(),
    "checksummed-state-bogus": lambda entries: with_checksum(_bogus_states(entries)),
    "checksummed-facts-a-list": lambda entries: with_checksum(_facts_a_list(entries)),
    "checksummed-entry-a-list": lambda entries: with_checksum({k: [1] for k in entries}),
    "checksum-wrong": lambda entries: with_checksum(entries).replace(b'"facts"', b'"facts" ', 1),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_11_a_damaged_facts_cache_file_is_dropped_and_recomputed(gfxgate_exe, work, history_env, clean_history, case):
    for path in facts_files(history_env):
        path.write_bytes(DAMAGE[case](entries_of(path)))
    run = replay(f"11 facts cache: {case}", gfxgate_exe, HISTORY, cwd=work, env=history_env, code=0)
    assert run.stdout == clean_history
    assert all(entries_of(path) for path in facts_files(history_env))  # rewritten as gfxgate writes them


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-a-file", "folder"])
def test_11_a_cache_file_that_is_not_a_regular_file(gfxgate_exe, work, history_env, clean_history, kind, tmp_path):
    """A FIFO hung forever; a link to /dev/zero ate 12 GB in 30 s. Never opened through; replaced by a real
    file (a link's target is never written)."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    paths = facts_files(history_env)
    for path in paths:
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev-zero":
            path.symlink_to("/dev/zero")
        elif kind == "link-to-a-file":
            path.symlink_to(victim)
        else:
            path.mkdir()
    run = replay(f"11 facts cache file is {kind}", gfxgate_exe, HISTORY, cwd=work, env=history_env, code=0)
    assert run.stdout == clean_history and victim.read_text() == "precious\n"
    if kind != "folder":
        assert all(path.is_file() and not path.is_symlink() and entries_of(path) for path in paths)
    else:  # a folder in the place of a file is left alone: one warning, the answer unchanged
        assert run.stderr.count("gfxgate: warning: the history facts cache cannot be written") == 1, run.stderr


def test_also_a_cache_folder_that_is_a_link_is_not_followed(gfxgate_exe, work, history_env, clean_history, tmp_path):
    """A folder inside the cache (history-facts/ollama/XX) that is a symbolic link: neither read nor written
    through (decided: gfxgate follows no link below its cache folder; the cache folder itself may be one)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = facts_files(history_env)[0].parent
    for path in folder.iterdir():
        (elsewhere / path.name).write_bytes(DAMAGE["state-bogus"](entries_of(path)))
        path.unlink()
    folder.rmdir()
    folder.symlink_to(elsewhere)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    run = replay("also: facts cache folder is a link", gfxgate_exe, HISTORY, cwd=work, env=history_env, code=0)
    assert run.stdout == clean_history
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before  # not trusted, not written through
    assert run.stderr.count("gfxgate: warning:") == 1 and "is a symbolic link" in run.stderr, run.stderr


def test_also_the_cache_folder_itself_may_be_a_link(gfxgate_exe, work, history_env, clean_history, tmp_path):
    moved = tmp_path / "moved-cache"
    shutil.move(history_env["GFXGATE_CACHE_DIR"], moved)
    link = tmp_path / "cache-link"
    link.symlink_to(moved)
    env = {**history_env, "GFXGATE_CACHE_DIR": str(link)}
    run = replay("also: the cache folder is a link", gfxgate_exe, HISTORY, cwd=work, env=env, code=0)
    assert run.stdout == clean_history and "warning" not in run.stderr


@pytest.mark.parametrize("how", ["xdg-cache-home-a-file", "cache-dir-a-file", "history-facts-a-file"])
def test_12_an_unwritable_cache_prints_the_answer_and_one_warning(
    gfxgate_exe, work, history_env, clean_history, tmp_path, how
):
    """The whole walk ran, then exit 70 with no output."""
    env = dict(history_env)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    if how == "xdg-cache-home-a-file":
        del env["GFXGATE_CACHE_DIR"]
        env["XDG_CACHE_HOME"] = str(blocker)
    elif how == "cache-dir-a-file":
        env["GFXGATE_CACHE_DIR"] = str(blocker)
    else:
        shutil.rmtree(Path(env["GFXGATE_CACHE_DIR"]) / "history-facts")
        (Path(env["GFXGATE_CACHE_DIR"]) / "history-facts").write_text("not a folder\n")
    run = replay(f"12 unwritable cache: {how}", gfxgate_exe, HISTORY, cwd=work, env=env, code=0)
    assert run.stdout == clean_history
    assert run.stderr.count("gfxgate: warning: the history facts cache cannot be written") == 1, run.stderr
    assert blocker.read_text() == "not a folder\n"


# -- 15, 16. tags ------------------------------------------------------------------------------------------
def many_tags(repo: Path, names, commit: str = "HEAD") -> None:
    """Lightweight tags ``names`` at ``commit``, written as ``git pack-refs --all`` leaves them: one sorted
    ``packed-refs`` file (git's format, read back by git below). ``git update-ref --stdin`` wrote 20,000 loose ref
    files first, and pack-refs read them back: 3.7 s of CPU for the 20,000 llama.cpp tags, here a few milliseconds."""
    sha = git(repo, "rev-parse", commit).strip()
    git(repo, "pack-refs", "--all")  # every ref of the repository in packed-refs, none loose
    packed = Path(git(repo, "rev-parse", "--git-path", "packed-refs").strip())
    packed = packed if packed.is_absolute() else repo / packed
    lines = packed.read_text().splitlines()[1:] if packed.exists() else []  # after its "# pack-refs with:" header
    refs = dict(line.split(" ", 1)[::-1] for line in lines if not line.startswith("^"))  # (peeled lines: none here)
    assert not any(line.startswith("^") for line in lines), "an annotated tag: this writer keeps no peeled lines"
    refs.update({f"refs/tags/{name}": sha for name in names})
    body = "".join(f"{refs[ref]} {ref}\n" for ref in sorted(refs, key=str.encode))
    packed.write_text("# pack-refs with: peeled fully-peeled sorted \n" + body)
    listed = git(repo, "for-each-ref", "--count=1", "--sort=-refname", "--format=%(refname) %(objectname)")
    assert listed.split() == [max(refs, key=str.encode), refs[max(refs, key=str.encode)]], listed


def test_15_an_unknown_ref_without_a_version_number_names_the_tags_there_are(gfxgate_exe, work, env, upstream):
    """`scan --ref ollama=foo` said "the repository has no tags" for a repository with 635."""
    clone = work / "ollama"
    git(work, "clone", "-q", "--no-local", "--bare", str(upstream / "ollama"), str(clone))
    many_tags(clone, [f"v0.40.{i}" for i in range(631)])
    run = replay(
        "15 --ref ollama=foo",
        gfxgate_exe,
        [*SCAN, "--source", "ollama=ollama", "--ref", "ollama=foo"],
        cwd=work,
        env=live_env(env, upstream),
        code=4,
        error="unknown tag or ref 'foo'",
    )
    assert "has no tags" not in run.stderr
    assert (
        "hint: no tag is spelled like it; 635 tags, the newest releases: v0.40.630, v0.40.629, v0.40.628" in run.stderr
    )
    empty = work / "empty"
    git(work, "init", "-q", "--bare", str(empty))
    git(work, "clone", "-q", "--no-local", str(upstream / "ollama"), str(work / "src"))
    git(work / "src", "push", "-q", str(empty), "HEAD:refs/heads/main")
    run = replay(
        "15 --ref in a repository without tags",
        gfxgate_exe,
        [*SCAN, "--source", "ollama=empty", "--ref", "ollama=foo"],
        cwd=work,
        env=live_env(env, upstream),
        code=4,
        outputs=("src/",),
        error="unknown tag or ref 'foo'",
    )
    assert "hint: the repository has no tags" in run.stderr


def ollama_with_many_llama_tags(work, upstream) -> None:
    """work/ollama: 40 tags v0.33.N whose LLAMA_CPP_VERSION names a llama.cpp tag that does not exist;
    work/llama.cpp.git: a bare llama.cpp clone with 20,000 extra release-shaped tags."""
    ollama, llama = work / "ollama", work / "llama.cpp.git"
    git(work, "clone", "-q", "--no-local", str(upstream / "ollama"), str(ollama))
    (ollama / "LLAMA_CPP_VERSION").write_text("b99999\n")
    git(ollama, "commit", "-q", "-am", "names a llama.cpp tag that does not exist")
    many_tags(ollama, [f"v0.33.{i}" for i in range(40)])
    git(work, "clone", "-q", "--no-local", "--bare", str(upstream / "llama.cpp"), str(llama))
    many_tags(llama, [f"b{20000 + i}" for i in range(20_000)])


def test_16_many_tags_are_ordered_once_per_repository(gfxgate_exe, work, env, upstream):
    """`history` over 40 ollama tags whose LLAMA_CPP_VERSION names a tag llama.cpp does not have, against a
    llama.cpp clone carrying 20,000 extra release-shaped tags: every rule reading ggml at every probe looked the
    ref up and re-sorted all 20,000 tags for its hint (the issue: 10,000 tags 45 s and 539 MB, 30,000 over 120 s)."""
    ollama_with_many_llama_tags(work, upstream)
    run = replay(
        "16 history, 20,000 llama.cpp tags, an unknown LLAMA_CPP_VERSION",
        gfxgate_exe,
        [
            "history",
            "-t",
            "gfx900",
            "--every-tag",
            "--from",
            "v0.33.0",
            "--format",
            "json",
            "--offline",
            "--source",
            "ollama=ollama",
            "--source",
            "llama-cpp=llama.cpp.git",
        ],
        cwd=work,
        env=live_env(env, upstream),
        code=0,
    )
    assert '"probed": 40' in run.stdout


# -- also seen: decided and documented ---------------------------------------------------------------------
def test_also_an_output_over_an_input_is_refused(gfxgate_exe, work, env, matrix):
    """`diagnose x.log -o x.log` replaced its log with the report. Decided: -o naming a file the command reads is a
    usage error (exit 2) before anything is read; the same for `diff` and `sweep report`."""
    import json

    from tests.diagnose.logs import ollama_0_12_3

    log = "\n".join(ollama_0_12_3()) + "\n"
    (work / "x.log").write_text(log)
    (work / "link.log").symlink_to("x.log")
    for args in (["x.log", "-o", "x.log"], ["x.log", "-o", "link.log"], ["-", "x.log", "-o", "./x.log"]):
        replay(
            f"also: diagnose {' '.join(args)}",
            gfxgate_exe,
            ["diagnose", *args],
            cwd=work,
            env=env,
            code=2,
            error="is the input x.log: the report would replace it"
            if args[0] != "-"
            else "the report would replace it",
        )
    assert (work / "x.log").read_text() == log
    (work / "m.json").write_text(json.dumps(matrix))
    replay(
        "also: diff A B -o B",
        gfxgate_exe,
        ["diff", "m.json", "m.json", "-o", "m.json"],
        cwd=work,
        env=env,
        code=2,
        error="-o m.json is the input m.json",
    )
    (work / "w.jsonl").write_text("")
    replay(
        "also: sweep report W -o W",
        gfxgate_exe,
        ["sweep", "report", "w.jsonl", "-o", "w.jsonl"],
        cwd=work,
        env=env,
        code=2,
        error="-o w.jsonl is the input w.jsonl",
    )
    replay(
        "also: diagnose x.log -o y.md",
        gfxgate_exe,
        ["diagnose", "x.log", "-o", "y.md"],
        cwd=work,
        env=env,
        code=0,
        outputs=("y.md",),
    )


def test_also_a_long_ref_or_source_is_quoted_short(gfxgate_exe, work, env):
    """An unknown `--ref` echoed the whole 100 KB ref in its error line; a 100 KB `--source` path was exit 70
    (ENAMETOOLONG). Decided: a ref over 255 characters (git's file-name limit) or a path over PATH_MAX is a usage
    error whose line quotes the first 80 characters and says the length."""
    for option, value, needle in (
        ("--ref", "ollama=" + "a" * 100_000, "100000 characters; a tag or branch name"),
        ("--ref", "ollama=" + "a b" * 80, "is not a tag or branch name"),
        ("--source", "ollama=/" + "a" * 100_000, "longer than a path or URL can be"),
    ):
        run = replay(
            f"also: {option} of {len(value)} characters",
            gfxgate_exe,
            [*SCAN, option, value],
            cwd=work,
            env=env,
            code=2,
            error=needle,
        )
        assert len(run.stderr) < 500, run.stderr


def test_13_diff_sarif_with_a_huge_pins_file_reads_none_of_it(gfxgate_exe, work, env, matrix):
    """`diff --format sarif --pins FILE` reads the pins file for SARIF locations only: sized first too."""
    import json

    (work / "m.json").write_text(json.dumps(matrix))
    sparse(work / "pins.toml", 3 * GIB // 2)
    run = replay(
        "13 diff --format sarif --pins 1.5 GB",
        gfxgate_exe,
        ["diff", "m.json", "m.json", "--format", "sarif", "--pins", "pins.toml"],
        cwd=work,
        env=env,
        code=0,
    )
    assert json.loads(run.stdout)["version"] == "2.1.0"


def test_14_a_server_number_that_overflows_leaves_a_readable_worklog(gfxgate_exe, work, env, tmp_path):
    """A llama-server answering ``"predicted_per_second": 1e999`` (Python's json reads inf) made the run's
    tokens/s infinite, written as the non-JSON ``Infinity``; `sweep report` then refused gfxgate's own worklog
    (exit 6), or before that wrote invalid JSON. The writer records a non-finite number as null."""
    import json
    import shlex
    import sys

    from tests.cli.test_replays import DEADLINE_S, PEER

    server = tmp_path / "overflowing_llama_server.py"
    server.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(PEER.parent)!r})\n"
        "import slow_llama_server as peer\n"
        'peer.BODY = (b\'{"content": "hi", "tokens_predicted": 1, "tokens_evaluated": 1, \'\n'
        '             b\'"stop_type": "limit", "timings": {"predicted_per_second": 1e999}}\')\n'
        "peer.main(sys.argv)\n"
    )
    (work / "m.gguf").write_bytes(b"GGUF")
    command = shlex.join([sys.executable, str(server), "answer"])
    replay(
        "14 llama-server answering 1e999 tokens/s",
        gfxgate_exe,
        [
            "sweep",
            "--llama-server",
            f"x={command}",
            "--model-file",
            "m.gguf",
            "--num-gpu",
            "0",
            "--timeout",
            str(DEADLINE_S),  # a hang guard: the run must succeed (its tokens/s overflow), also on a busy machine
            "--no-probe-gpu",
            "--progress",
            "none",
            "--worklog",
            "w.jsonl",
        ],
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl", "w.jsonl.logs/"),
    )
    worklog = (work / "w.jsonl").read_text()
    assert '"outcome":"ok"' in worklog, worklog[:2000]  # answered: the null is the overflow's, not a timeout's
    assert '"tokens_per_s":null' in worklog and "Infinity" not in worklog, worklog[:2000]
    run = replay(
        "14 sweep report of that worklog",
        gfxgate_exe,
        ["sweep", "report", "w.jsonl", "--format", "json"],
        cwd=work,
        env=env,
        code=0,
    )
    json.loads(run.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the report"))


def test_10_git_grep_of_a_fixed_string_never_prints_a_blob_over_the_limit(tmp_path):
    """`git grep` prints a matching line whole: a one-line blob over the per-blob limit (trace's fixed-string
    greps) would come back whole. Its size is asked first, as for a read: an error, not a hit."""
    from gfxgate.errors import SourceError
    from gfxgate.sources.base import MAX_BLOB_BYTES
    from gfxgate.sources.gitrepo import GitRepo, GitSource

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "big.txt").write_bytes(b"x" * (MAX_BLOB_BYTES + 1))
    (repo / "small.txt").write_bytes(b"x marks the spot\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one long line")
    git(repo, "tag", "v1")
    source = GitSource(GitRepo("ollama", str(repo), offline=True), "v1")
    try:
        assert [h.path for h in source.grep("marks", ["small.txt"], fixed=True)] == ["small.txt"]
        with pytest.raises(SourceError, match=r"big.txt at [0-9a-f]{12}: 8388609 bytes; gfxgate reads at most"):
            source.grep("x", ["big.txt", "small.txt"], fixed=True)
        with pytest.raises(SourceError, match="8388609 bytes"):
            source.read("big.txt")
    finally:
        source.close()


def test_13_scan_with_a_huge_snapshot_file_is_refused_before_the_read(gfxgate_exe, work, env):
    sparse(work / "snap.json", 3 * GIB // 2)
    replay(
        "13 scan --snapshot 1.5 GB",
        gfxgate_exe,
        [*SCAN, "--snapshot", "snap.json"],
        cwd=work,
        env=env,
        code=3,
        error="snap.json: 1610612736 bytes; a snapshot file may have at most 16777216",
    )
