"""`gfxgate history`: release order, bisection, pre-releases, drift, moved files, the facts cache, no checkout."""

from __future__ import annotations

import json

import git
import pytest

from gfxgate.history import walk as history_mod
from gfxgate.history.walk import FactsCache, TagProber, change_points, release_tags
from gfxgate.gate.ruleset import default_rules
from gfxgate.sources.resolve import load_pins
from gfxgate.targets import catalog
from tests.prcheck.golden import gfxgate


def test_release_tags_in_semantic_version_order():
    tags = ["v0.10.0", "v0.9.0", "v0.2.0", "v0.2.1-rc1", "v0.10.0-rc2", "latest", "v0.1.0"]
    assert release_tags(tags, r"^v\d+\.\d+\.\d+$") == ["v0.1.0", "v0.2.0", "v0.9.0", "v0.10.0"]
    assert release_tags(tags, r"^v\d+\.\d+\.\d+$", prereleases=True) == [
        "v0.1.0",
        "v0.2.0",
        "v0.2.1-rc1",
        "v0.9.0",
        "v0.10.0-rc2",
        "v0.10.0",
    ]
    # ollama's CI / internal-build tags are pre-releases of their base, matched by the pattern without the suffix
    ci = ["v0.9.1", "v0.9.1-ci0", "v0.9.1-rc0", "v0.9.4-citest0", "v0.10.2-int1", "v0.9.0"]
    assert release_tags(ci, r"^v\d+\.\d+\.\d+$") == ["v0.9.0", "v0.9.1"]
    assert release_tags(ci, r"^v\d+\.\d+\.\d+$", prereleases=True) == [
        "v0.9.0",
        "v0.9.1-ci0",
        "v0.9.1-rc0",
        "v0.9.1",
        "v0.9.4-citest0",
        "v0.10.2-int1",
    ]


def test_bisection_finds_every_change_of_a_step_sequence():
    for values in ([0] * 40 + [1] * 60, [0] * 10 + [1] * 30 + [2] * 30 + [3], [5] * 7, [0, 1], list(range(9))):
        probes = []

        def sig(i, values=values, probes=probes):
            probes.append(i)
            return values[i]

        assert change_points(len(values), sig) == change_points(len(values), lambda i, v=values: v[i], every=True)
    many = [0] * 50 + [1] * 50
    seen = set()
    change_points(len(many), lambda i: seen.add(i) or many[i])
    assert len(seen) <= 10  # log2(100) + ends, not 100


def test_bisection_misses_a_change_that_reverts_but_every_tag_sees_it():
    values = [0, 0, 1, 0, 0]
    assert change_points(5, lambda i: values[i]) == []
    assert change_points(5, lambda i: values[i], every=True) == [2, 3]


def history_json(env, tmp_path, *args):
    done = gfxgate(["history", "--format", "json", *args], env, tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def changes(data, layer, target):
    entry = next(layer_ for layer_ in data["layers"] if layer_["id"] == layer)
    row = next(t for t in entry["targets"] if t["target"] == target)
    return row["first"], [
        (c["tag"], c["previous_tag"], c["kind"], c["old"]["status"], c["new"]["status"]) for c in row["changes"]
    ]


def test_history_of_gfx900_on_the_synthetic_upstream(history_env, tmp_path):
    data = history_json(history_env, tmp_path, "-t", "gfx900")
    assert data["range"] == {"from": "v0.11.0", "to": "v0.14.10", "tags": 8, "probed": 8}
    first, steps = changes(data, "cmake-filter", "gfx900")
    assert first["status"] == "allowed" and first["tag"] == "v0.11.0"
    assert steps == [
        ("v0.13.0", "v0.12.0", "regression", "allowed", "override-required"),
        ("v0.14.10", "v0.14.9", "drift", "override-required", "unknown"),
    ]
    _, steps = changes(data, "discovery", "gfx900")
    assert steps == [("v0.13.0", "v0.12.0", "improvement", "partial", "allowed")]
    entry = next(layer_ for layer_ in data["layers"] if layer_["id"] == "discovery")["targets"][0]["changes"][0]
    assert "GetSupportedGFX" in entry["old"]["summary"] and "GGML_CUDA_INIT" in entry["new"]["summary"]
    assert entry["new"]["evidence"][0]["where"] == "ollama@v0.13.0:ml/device.go:5"
    assert changes(data, "release-packaging", "gfx900")[1] == [
        ("v0.14.0", "v0.13.1", "regression", "allowed", "blocked")
    ]
    assert changes(data, "cmake-presets", "gfx900")[1] == [("v0.14.9", "v0.14.0", "regression", "allowed", "blocked")]
    assert changes(data, "source-macros", "gfx900")[1] == []  # v0.13.1 moved ml/device.go: no change reported
    # the drift keeps its reason
    drift = next(layer_ for layer_ in data["layers"] if layer_["id"] == "cmake-filter")["targets"][0]["changes"][1]
    assert "did not match" in drift["new"]["reason"]


def test_bisection_agrees_with_every_tag_and_probes_less(history_env, tmp_path):
    bisect = history_json(history_env, tmp_path, "-t", "gfx900", "--layer", "release-packaging")
    every = history_json(history_env, tmp_path, "-t", "gfx900", "--layer", "release-packaging", "--every-tag")
    assert bisect["layers"] == every["layers"]
    assert bisect["range"]["probed"] < every["range"]["probed"] == 8


def test_prereleases_only_when_asked(history_env, tmp_path):
    data = history_json(history_env, tmp_path, "-t", "gfx900", "--layer", "cmake-filter", "--prereleases")
    assert data["range"]["tags"] == 9
    assert changes(data, "cmake-filter", "gfx900")[1][0][:2] == ("v0.12.1-rc1", "v0.12.0")


def test_window_and_unknown_bounds(history_env, tmp_path):
    data = history_json(
        history_env, tmp_path, "-t", "gfx900", "--from", "v0.12.0", "--to", "v0.14.0", "--layer", "cmake-filter"
    )
    assert data["range"] == {"from": "v0.12.0", "to": "v0.14.0", "tags": 4, "probed": data["range"]["probed"]}
    assert [s[0] for s in changes(data, "cmake-filter", "gfx900")[1]] == ["v0.13.0"]
    done = gfxgate(["history", "-t", "gfx900", "--from", "v0.12.5"], history_env, tmp_path)
    assert done.returncode == 4 and "nearest tags: " in done.stderr and "v0.12.0" in done.stderr
    done = gfxgate(["history", "-t", "gfx900", "--from", "v0.12.1-rc1"], history_env, tmp_path)
    assert done.returncode == 4 and "--prereleases" in done.stderr
    done = gfxgate(["history", "-t", "gfx900", "--layer", "runtime"], history_env, tmp_path)
    assert done.returncode == 2 and "not read from ollama" in done.stderr


def test_facts_cache_means_no_reparse(history_env, tmp_path, monkeypatch):
    pins, rules, cat = load_pins(), default_rules(), catalog()
    targets = [cat.parse("gfx900")]
    cache_dir = tmp_path / "facts"
    with TagProber(pins, rules, "ollama", targets, cat, cache=FactsCache(cache_dir)) as first:
        result = history_mod.history(first, every_tag=True)
    assert first.cache.misses > 0 and any(cache_dir.rglob("*.json"))

    def no_parsing(*args, **kwargs):
        raise AssertionError("collect_facts called although every fact is cached")

    monkeypatch.setattr(history_mod, "collect_facts", no_parsing)
    with TagProber(pins, rules, "ollama", targets, cat, cache=FactsCache(cache_dir)) as second:
        again = history_mod.history(second, every_tag=True)
    assert second.cache.misses == 0 and second.cache.hits > 0
    assert again.to_json() == result.to_json()


def test_history_reads_blobs_without_checkout(history_env, tmp_path):
    repo = git.Repo(history_env["GFXGATE_SOURCE_OLLAMA"])
    head = repo.head.commit.hexsha
    history_json(history_env, tmp_path, "-t", "gfx900", "--every-tag")
    assert repo.head.commit.hexsha == head and not repo.is_dirty(untracked_files=True)
    assert (
        repo.working_tree_dir
        and (history_env["GFXGATE_SOURCE_OLLAMA"] / "README.md").read_text() == "work after the last release\n"
    )


def test_unknown_repo_is_usage_error(history_env, tmp_path):
    done = gfxgate(["history", "-t", "gfx900", "--repo", "nope"], history_env, tmp_path)
    assert done.returncode == 2 and "unknown repository" in done.stderr


@pytest.mark.parametrize("fmt", ["md", "text"])
def test_history_human_formats(history_env, tmp_path, fmt):
    done = gfxgate(["history", "-t", "gfx900", "--format", fmt], history_env, tmp_path)
    assert done.returncode == 0
    assert "v0.13.0" in done.stdout and "regression" in done.stdout


def test_a_plain_folder_cannot_be_walked(history_env, tmp_path):
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "CMakeLists.txt").write_text("project(x)\n")
    done = gfxgate(["history", "-t", "gfx900", "--source", f"ollama={folder}"], history_env, tmp_path)
    assert done.returncode == 2 and "not a git repository" in done.stderr


def test_a_failed_tag_fetch_is_exit_5_not_a_silent_stale_walk(history_env, tmp_path):
    """The cached clone's remote is gone: new tags cannot be fetched, so the walk stops with exit 5."""
    import shutil

    mirror = tmp_path / "mirror.git"
    shutil.copytree(history_env["GFXGATE_SOURCE_OLLAMA"] / ".git", mirror)
    env = {**history_env, "GFXGATE_SOURCE_OLLAMA": mirror.as_uri(), "GFXGATE_CACHE_DIR": str(tmp_path / "cache")}
    assert gfxgate(["history", "-t", "gfx900"], env, tmp_path).returncode == 0  # clones into the cache
    shutil.rmtree(mirror)
    done = gfxgate(["history", "-t", "gfx900"], env, tmp_path)
    assert done.returncode == 5, done.stderr
    assert "ollama: cannot fetch the tags of file://" in done.stderr and "--offline" in done.stderr
    offline = gfxgate(["history", "-t", "gfx900", "--offline"], env, tmp_path)
    assert offline.returncode == 0, offline.stderr  # the tags already cached


def test_history_shows_progress_on_a_terminal_only(history_env, tmp_path, gfxgate_exe, gfxgate_cli):
    """issue 29: a long walk shows a progress line on stderr when it is a terminal (not with GFXGATE_NO_PROGRESS,
    never when piped), and the report is the same."""

    from tests.report.test_terminal import on_terminal

    args = ["history", "-t", "gfx900", "--every-tag", "--format", "json"]
    screen = on_terminal(gfxgate_exe, [*args, "-o", str(tmp_path / "tty.json")])
    assert "history of ollama:" in screen and "probed, reading v0." in screen
    quiet = on_terminal(gfxgate_exe, [*args, "-o", str(tmp_path / "quiet.json")], env={"GFXGATE_NO_PROGRESS": "1"})
    assert "probed, reading" not in quiet
    piped = gfxgate_cli(*args, timeout=120)
    assert piped.returncode == 0 and "probed, reading" not in piped.stderr
    assert json.loads((tmp_path / "tty.json").read_text())["layers"] == json.loads(piped.stdout)["layers"]


def test_cached_facts_of_other_matcher_code_are_not_taken(tmp_path):
    """The facts cache is keyed by the rule's definition; a fix to a matcher's code changes no rule, so facts cached
    by the old code were served after it (found while rebuilding the snapshots of issue 38). The cache file names the
    code that wrote it (history/walk.py: code_digest) and facts of other code are a miss."""
    import json

    from gfxgate.gate.engine import RuleFacts
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.history.walk import FactsCache

    rule = default_rules().rules[0]
    commit = "ab" * 20
    facts = RuleFacts(rule_id=rule.id, digest=rule.digest, state="not-applicable", reason="before the rule's versions")
    cache = FactsCache(tmp_path)
    cache.put(rule, commit, "v0.1.0", facts)
    cache.flush()
    assert FactsCache(tmp_path).get(rule, commit, "v0.1.0") is not None
    path = next(tmp_path.glob("*/*.json"))
    head, _, body = path.read_bytes().partition(b"\n")
    header = json.loads(head)
    path.write_bytes(json.dumps({**header, "code": "0" * 32}).encode() + b"\n" + body)
    again = FactsCache(tmp_path)
    assert again.get(rule, commit, "v0.1.0") is None
    assert again.dropped == []  # a miss, not an untrusted file
