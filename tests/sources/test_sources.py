"""Sources: versions, globs, partial clones, interrupted clones, prefetch, read-only local clones."""

from __future__ import annotations

import os
import subprocess

import git
import pytest

from gfxgate.errors import NetworkError, SourceError, UsageError
from gfxgate.sources.base import glob_regex, safe_relpath
from gfxgate.sources import gitrepo
from gfxgate.sources.gitrepo import GitRepo, GitSource, run_git
from gfxgate.sources.resolve import SourceSet, load_pins, parse_assignments
from gfxgate.sources.versions import base_version, in_range, is_prerelease, nearest_tags, sort_tags, version_key


def test_version_order_and_ranges():
    tags = ["v0.12.10", "v0.12.4", "v0.12.4-rc1", "v0.9.0", "b100", "rocm-6.3.3"]
    assert sort_tags(["v0.12.10", "v0.12.4", "v0.12.4-rc1", "v0.9.0"]) == [
        "v0.9.0",
        "v0.12.4-rc1",
        "v0.12.4",
        "v0.12.10",
    ]
    assert is_prerelease("v0.12.4-rc1") and not is_prerelease("v0.12.4")
    assert in_range("v0.17.5", ">=0.12.4,<0.30") and not in_range("v0.30.0", "<0.30")
    assert in_range("rocm-6.3.3", ">=6.1") and in_range("b4567", ">=4000")
    assert "v0.12.4" in nearest_tags("v0.12.5", tags) and "v0.12.4-rc1" not in nearest_tags("v0.12.5", tags)


# ollama's CI and internal-build tags (git -C ollama tag: the seven that had no version key), each with its base
# version and the tags before and after it in the clone (the base's first release candidate; v0.10.2 never had one)
CI_TAGS = {
    "v0.4.0-ci3": ("v0.4.0", "v0.3.14", "v0.4.0-rc0"),
    "v0.9.1-ci0": ("v0.9.1", "v0.9.0", "v0.9.1-rc0"),
    "v0.9.1-ci1": ("v0.9.1", "v0.9.0", "v0.9.1-rc0"),
    "v0.9.4-citest0": ("v0.9.4", "v0.9.3", "v0.9.4-rc0"),
    "v0.9.6-ci0": ("v0.9.6", "v0.9.5", "v0.9.6-rc0"),
    "v0.10.2-int1": ("v0.10.2", "v0.10.1", "v0.11.0-rc0"),
    "v0.12.7-citest0": ("v0.12.7", "v0.12.6", "v0.12.7-rc0"),
}


@pytest.mark.parametrize("tag", CI_TAGS)
def test_ci_and_internal_tags_are_prereleases_of_their_base(tag):
    base, before, after = CI_TAGS[tag]
    assert version_key(tag) is not None and is_prerelease(tag) and not is_prerelease(base)
    assert base_version(tag) == base and base_version(base) == base
    assert sort_tags([after, tag, before]) == [before, tag, after]
    assert version_key(before) < version_key(tag) < version_key(base) and version_key(tag) < version_key(after)
    assert in_range(tag, f">={before[1:]},<{base[1:]}") and not in_range(tag, f">={after[1:]}")
    assert not in_range(tag, f"=={base[1:]}") and in_range(tag, f"!={base[1:]}")


def test_prerelease_words_order():
    # other words below the known ones, alphabetically then by number; rc/alpha/beta/pre by number alone, as before
    assert sort_tags(["v0.9.1", "v0.9.1-rc0", "v0.9.1-ci1", "v0.9.1-citest0", "v0.9.1-ci0", "v0.9.1-int1"]) == [
        "v0.9.1-ci0",
        "v0.9.1-ci1",
        "v0.9.1-citest0",
        "v0.9.1-int1",
        "v0.9.1-rc0",
        "v0.9.1",
    ]
    assert sort_tags(["v1.0-rc2", "v1.0-alpha3", "v1.0-beta1", "v1.0rc.0"]) == [
        "v1.0rc.0",
        "v1.0-beta1",
        "v1.0-rc2",
        "v1.0-alpha3",
    ]
    assert version_key("v1.0-rc") == version_key("v1.0-pre0") and version_key("v1.2.0") == version_key("v1.2")
    assert base_version("v1.0rc.0") == "v1.0" and base_version("rocm-6.3.3") == "rocm-6.3.3"
    for not_a_release in ("v1.0-ci", "v1.0-docs", "v1.0+build1", "v1.0-ci3-x", "latest"):
        assert version_key(not_a_release) is None and not is_prerelease(not_a_release), not_a_release


def test_globs_and_path_safety():
    rx = glob_regex("discover/*.go")
    assert rx.match("discover/amd.go") and not rx.match("discover/sub/amd.go")
    assert glob_regex("**/CMakePresets.json").match("llama/server/CMakePresets.json")
    assert safe_relpath("./docs/a.rst") == "docs/a.rst"
    for bad in ("../x", "/etc/passwd", "a/../../b"):
        with pytest.raises(Exception, match="escapes"):
            safe_relpath(bad)


def test_assignments_are_validated():
    assert parse_assignments(["ollama=v0.12.3"], "--ref") == {"ollama": "v0.12.3"}
    with pytest.raises(UsageError):
        parse_assignments(["ollama"], "--ref")


def test_interrupted_clone_leaves_no_cache(upstream, monkeypatch, _isolated_cache):
    """Ctrl-C in the middle of a clone: the half-written clone is removed, the next run clones cleanly."""
    real_clone = gitrepo._clone_into

    def interrupted(name, url, dest):
        real_clone(name, url, dest)  # the data arrived in the temporary folder …
        raise KeyboardInterrupt  # … and the user pressed Ctrl-C before it was moved into place

    monkeypatch.setattr(gitrepo, "_clone_into", interrupted)
    repo = GitRepo("ollama", (upstream / "ollama").as_uri(), offline=False)
    with pytest.raises(KeyboardInterrupt):
        repo.ensure_clone()
    assert not any((_isolated_cache / "repos").iterdir())
    monkeypatch.setattr(gitrepo, "_clone_into", real_clone)
    source = GitSource(GitRepo("ollama", (upstream / "ollama").as_uri(), offline=False), "v0.17.5")
    assert b"list(FILTER AMDGPU_TARGETS" in source.read("CMakeLists.txt")


def test_prefetch_fetches_missing_blobs_in_one_go(upstream, _isolated_cache):
    repo = GitRepo("ollama", (upstream / "ollama").as_uri(), offline=False)
    source = GitSource(repo, "v0.12.3")
    paths = ["CMakeLists.txt", "CMakePresets.json", "discover/amd_common.go"]
    listing = subprocess.run(
        ["git", "--git-dir", str(repo.git_dir), "ls-tree", source.commit, "--", *paths],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    oids = [line.split()[2] for line in listing.splitlines()]

    def missing() -> int:
        return len(set(oids) & repo.missing_objects(source.commit))

    assert missing() == 3  # blob:none: nothing fetched yet
    source.prefetch(paths)
    assert missing() == 0


def test_prefetch_lists_a_commits_tree_once(upstream, _isolated_cache, monkeypatch):
    """A scan prefetches once per rule: the commit's tree and what of it is missing are listed at the first call only
    (counted: one cold `scan --live` listed them 18 and 19 times), and a blob fetched once is not asked for again."""
    from collections import Counter

    repo = GitRepo("ollama", (upstream / "ollama").as_uri(), offline=False)
    source = GitSource(repo, "v0.12.3")
    calls: Counter = Counter()
    real = gitrepo.run_git

    def counting(args, **kwargs):
        calls[args[2] if args[0] == "-c" else args[0]] += 1
        return real(args, **kwargs)

    monkeypatch.setattr(gitrepo, "run_git", counting)
    source.prefetch(["CMakeLists.txt"])
    source.prefetch(["CMakeLists.txt", "CMakePresets.json"])
    source.prefetch(["discover/"])  # a folder: the blobs under it
    monkeypatch.setattr(gitrepo, "run_git", real)
    assert calls == {"ls-tree": 1, "rev-list": 1, "fetch": 3}, calls
    wanted = ["CMakeLists.txt", "CMakePresets.json", "discover/amd_common.go"]
    listing = run_git(["ls-tree", source.commit, "--", *wanted], git_dir=repo.git_dir).stdout
    oids = {line.split()[2] for line in listing.splitlines()}
    assert len(oids) == 3 and not oids & repo.missing_objects(source.commit)
    source.close()


def test_local_clone_is_read_in_place_never_fetched(upstream, _isolated_cache):
    pins = load_pins().with_pin_set("study")  # the fixture repository's newest tag is the seed study's version
    sources = SourceSet(pins, sources={"ollama": str(upstream / "ollama")})
    src = sources.get("ollama")
    assert src.commit == git.Repo(upstream / "ollama").tags["v0.17.5"].commit.hexsha
    assert not (_isolated_cache / "repos").exists()
    with pytest.raises(SourceError, match="unknown tag"):
        sources.get("ollama", "v9.9.9")
    sources.close()


def test_missing_local_path_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        SourceSet(load_pins(), sources={"ollama": str(tmp_path / "nope")}).get("ollama")


def test_unreachable_clone_is_a_network_error_with_gits_own_line(tmp_path, _isolated_cache):
    repo = GitRepo("ollama", (tmp_path / "gone").as_uri(), offline=False)
    with pytest.raises(NetworkError, match=r"^ollama: cannot clone file://.*/gone: fatal: "):
        repo.ensure_clone()
    assert not any((_isolated_cache / "repos").iterdir())


def test_a_git_that_hangs_times_out_as_a_network_error(tmp_path, monkeypatch):
    """A hung git (here a stand-in that sleeps) ends with exit 5's error, its process group killed."""
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho $$ > "$0.pid"\nsleep 30\n', encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    with pytest.raises(NetworkError, match="git fetch origin timed out after 1 s") as info:
        run_git(["fetch", "origin"], git_dir=tmp_path, timeout=1)
    assert info.value.exit_code == 5
    pid = int((tmp_path / "bin" / "git.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
