"""Opt-in: the message catalogue against real upstream clones (GFXGATE_TEST_UPSTREAM=/folder with ollama, clr).

Two checks: `gfxgate messages` at v0.12.3, v0.17.5 and v0.32.15 finds each message where the catalogue says it
is printed (and nothing is stale); and Ollama-format log lines *rendered from the printing code at each tag*
(the format string of the located Go line, its verbs filled, its slog attribute keys added) are recognised as
that message. Without GFXGATE_TEST_UPSTREAM these tests are deselected, not counted as passing.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from gfxgate.cli import main

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]
TAGS = ("v0.12.3", "v0.17.5", "v0.32.15")
EXPECTED = {  # message -> tags that print it
    "ollama-amdgpu-not-supported": {"v0.12.3"},
    "ollama-igpu-skipped": {"v0.12.3"},
    "ollama-filtering-uninitialized": {"v0.17.5", "v0.32.15"},
    "ollama-vulkan-disabled": {"v0.17.5"},
    "ollama-dropping-rocm": {"v0.32.15"},
    "ollama-dropping-igpu": {"v0.32.15"},
    "llama-server-terminated": {"v0.32.15"},
    "ollama-runner-terminated": set(TAGS),
    "ollama-listening": set(TAGS),
    "ollama-inference-compute": set(TAGS),
}
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_VERB = re.compile(r"%[-+# 0-9.]*[a-zA-Z]")
SAMPLES = {"%s": "gfx900", "%d": "1", "%v": "[gfx1030 gfx1100]", "%w": "exit status 2", "%x": "0"}
ATTR_SAMPLES = {
    "env": '"map[HSA_OVERRIDE_GFX_VERSION:9.0.0 OLLAMA_VULKAN:1]"',
    "gpu_type": "gfx900",
    "gfx_target": "gfx900",
    "compute": "gfx900",
    "library": "ROCm",
}


@pytest.fixture
def upstream_env(monkeypatch):
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    if (root / "clr").exists():
        monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))
    if (root / "llama.cpp").exists():  # an unpacked llama.cpp tree stands in for the LLAMA_CPP_VERSION tag
        monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(root / "llama.cpp"))
    return root


def check(capsys, tag):
    with pytest.raises(SystemExit) as info:
        main(["messages", "--format", "json", "--offline", "--ref", f"ollama={tag}"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    return {m["id"]: m for m in json.loads(out)["messages"]}


def assert_live_exactly(found, ids, live):
    """Of the messages ``ids``, exactly ``live`` are live at this tag and every other one is retired (never stale)."""
    states = {i: found[i]["state"] for i in ids}
    assert {i for i, s in states.items() if s == "live"} == live, states
    assert all(s == "retired" for i, s in states.items() if i not in live), states


@pytest.mark.parametrize("tag", TAGS)
def test_catalogue_is_live_where_it_says(upstream_env, capsys, tag):
    found = check(capsys, tag)
    assert not [i for i, m in found.items() if m["state"] == "stale"]
    for message, tags in EXPECTED.items():
        state = found[message]["state"]
        assert state == ("live" if tag in tags else "retired"), (message, tag, found[message]["summary"])
        if state == "live":
            assert found[message]["summary"].startswith(f"printed at ollama@{tag}:")


def render_go(lines: list[str], version: str, *, numbers: str = "1") -> str | None:
    """An slog text line rendered from the Go printing code: format string, verbs filled, attribute keys added."""
    text = " ".join(line.strip() for line in lines)
    strings = _STRING.findall(text)
    if not strings:
        return None
    msg = strings[0].replace('\\"', '"')
    if "version %s" in msg:
        msg = msg.replace("(version %s)", f"(version {version})")
    samples = {**SAMPLES, "%d": numbers}
    msg = _VERB.sub(lambda m: samples.get(m.group(0)[0] + m.group(0)[-1], numbers), msg)
    keys = [s for s in strings[1:] if re.fullmatch(r"[a-z_]+", s)]
    attrs = "".join(f" {k}={ATTR_SAMPLES.get(k, 'x')}" for k in keys)
    return f'time=2025-01-01T00:00:00.000Z level=INFO source=f.go:1 msg="{msg}"{attrs}'


@pytest.mark.parametrize("tag", TAGS)
def test_lines_rendered_from_the_printing_code_are_recognised(upstream_env, tag):
    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from gfxgate.diagnose.upstream import check_catalogue
    from gfxgate.sources.resolve import SourceSet, load_pins

    catalogue = default_catalogue()
    sourceset = SourceSet(load_pins(), refs={"ollama": tag}, offline=True)
    version_line = f'time=T level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:11434 (version {tag[1:]})"'
    rendered = 0
    try:
        for result in check_catalogue(catalogue, sourceset):
            if result.state != "live":
                continue
            for spec_result in result.results:
                if spec_result.spec.repo != "ollama":
                    continue
                source = sourceset.get("ollama")
                for location in spec_result.locations:
                    code = (source.read_text(location.path) or "").splitlines()[location.line - 1 : location.line + 3]
                    line = render_go(code, tag[1:], numbers="0" if result.message.family == "offload-zero" else "1")
                    if line is None:
                        continue
                    d = diagnose_log(read_stream("r", io.BytesIO(f"{version_line}\n{line}\n".encode())), catalogue)
                    ids = (
                        [f.message for f in d.findings]
                        + [g.evidence[0].source for g in d.gpus]
                        + [f.evidence[0].source for f in d.facts]
                    )
                    family = {m.id for m in catalogue.messages if m.family == result.message.family}
                    assert d.recognised == 2 and (set(ids) & family or result.message.kind == "fact"), (location, line)
                    rendered += 1
    finally:
        sourceset.close()
    assert rendered >= 6


# The discovery rejections of ollama < v0.12.4, across their wordings: at tags on both sides of each boundary (found
# with `git grep` at every tag), exactly these entries are live, the others of the two families retired, none stale.
WORDINGS = (
    "ollama-amdgpu-not-supported",
    "ollama-amdgpu-not-supported-v0129",
    "ollama-amdgpu-not-supported-v0133",
    "ollama-amdgpu-too-old",
    "ollama-amdgpu-too-old-v0129",
    "ollama-igpu-skipped",
    "ollama-igpu-skipped-v0129",
    "ollama-igpu-skipped-windows-v0129",
)
OLD = {
    "ollama-amdgpu-not-supported-v0129",
    "ollama-amdgpu-too-old-v0129",
    "ollama-igpu-skipped-v0129",
    "ollama-igpu-skipped-windows-v0129",
}
LIVE_AT = {
    "v0.1.28": set(),
    "v0.1.29": OLD,
    "v0.1.32": OLD,
    "v0.1.33-rc1": {
        "ollama-amdgpu-not-supported-v0133",
        "ollama-amdgpu-too-old",
        "ollama-amdgpu-too-old-v0129",
        "ollama-igpu-skipped-v0129",
        "ollama-igpu-skipped-windows-v0129",
    },
    "v0.1.34": {
        "ollama-amdgpu-not-supported-v0133",
        "ollama-amdgpu-too-old",
        "ollama-amdgpu-too-old-v0129",
        "ollama-igpu-skipped-v0129",
        "ollama-igpu-skipped-windows-v0129",
    },
    "v0.1.35-rc1": {
        "ollama-amdgpu-not-supported-v0133",
        "ollama-amdgpu-too-old",
        "ollama-igpu-skipped",
        "ollama-igpu-skipped-v0129",
    },
    "v0.3.13": {
        "ollama-amdgpu-not-supported-v0133",
        "ollama-amdgpu-too-old",
        "ollama-igpu-skipped",
        "ollama-igpu-skipped-v0129",
    },
    "v0.3.14-rc0": {"ollama-amdgpu-not-supported", "ollama-amdgpu-too-old", "ollama-igpu-skipped"},
    "v0.12.3": {"ollama-amdgpu-not-supported", "ollama-amdgpu-too-old", "ollama-igpu-skipped"},
    "v0.12.4-rc0": set(),
}


@pytest.mark.parametrize("tag", LIVE_AT)
def test_old_discovery_wordings_are_live_exactly_where_printed(upstream_env, capsys, tag):
    found = check(capsys, tag)
    assert_live_exactly(found, WORDINGS, LIVE_AT[tag])


# The runner and server lines of Ollama's own code, at tags on both sides of each boundary (found with git log -S /
# git grep at every tag; the first sweep of `gfxgate messages` over all 594 tags v0.1.20 … v0.33.0-rc2 is in the
# commit): v0.1.20 … v0.1.31 ran llama.cpp in-process (no runner lines), v0.1.32-rc1 starts a runner subprocess,
# v0.1.34-rc1 dumps the server config, v0.1.35-rc1 logs "inference compute", the CI tag v0.4.0-ci3 … v0.4.0-rc5 keep
# the runner code in runners/llama-server.go, v0.11.5-rc0 says "starting runner" instead of "starting llama server".
RUNNER_LINES = (
    "ollama-server-config",
    "ollama-starting-runner",
    "ollama-starting-runner-v0132",
    "ollama-runner-started",
    "ollama-inference-compute",
    "ollama-runner-terminated",
)
RUNNER_OLD = {"ollama-starting-runner-v0132", "ollama-runner-started", "ollama-runner-terminated"}
RUNNER_LIVE_AT = {
    "v0.1.31": set(),
    "v0.1.32-rc1": RUNNER_OLD,
    "v0.1.33": RUNNER_OLD,
    "v0.1.34-rc1": RUNNER_OLD | {"ollama-server-config"},
    "v0.1.34": RUNNER_OLD | {"ollama-server-config"},
    "v0.1.35-rc1": RUNNER_OLD | {"ollama-server-config", "ollama-inference-compute"},
    "v0.3.14": RUNNER_OLD | {"ollama-server-config", "ollama-inference-compute"},
    "v0.4.0-ci3": RUNNER_OLD | {"ollama-server-config", "ollama-inference-compute"},
    "v0.4.0-rc5": RUNNER_OLD | {"ollama-server-config", "ollama-inference-compute"},
    "v0.11.4": RUNNER_OLD | {"ollama-server-config", "ollama-inference-compute"},
    "v0.11.5-rc0": set(RUNNER_LINES) - {"ollama-starting-runner-v0132"},
}


@pytest.mark.parametrize("tag", RUNNER_LIVE_AT)
def test_runner_lines_are_live_exactly_where_printed(upstream_env, capsys, tag):
    found = check(capsys, tag)
    assert_live_exactly(found, RUNNER_LINES, RUNNER_LIVE_AT[tag])
    for i in RUNNER_LIVE_AT[tag]:
        assert found[i]["summary"].startswith(f"printed at ollama@{tag}:"), found[i]["summary"]


# ollama's CI and internal-build tags (v0.4.0-ci3, v0.9.1-ci0, …) are pre-releases of their base version: each is
# judged like the tag after it (its base's first candidate, or v0.11.0-rc0 after v0.10.2-int1), where it was reported
# stale for every message with a version range before (they had no version key); v0.12.7-citest0 predates the
# "filtering uninitialized" line of v0.12.7-rc0
CI_TAGS = {
    "v0.4.0-ci3": "v0.4.0-rc0",
    "v0.9.1-ci0": "v0.9.1-rc0",
    "v0.9.1-ci1": "v0.9.1-rc0",
    "v0.9.4-citest0": "v0.9.4-rc0",
    "v0.9.6-ci0": "v0.9.6-rc0",
    "v0.10.2-int1": "v0.11.0-rc0",
    "v0.12.7-citest0": "v0.12.7-rc0",
}


@pytest.mark.parametrize("tag", CI_TAGS)
def test_ci_tags_are_versioned_like_their_neighbours(upstream_env, capsys, tag):
    at_ci = {i: m["state"] for i, m in check(capsys, tag).items()}
    after = {i: m["state"] for i, m in check(capsys, CI_TAGS[tag]).items()}
    differ = {i: (at_ci[i], after[i]) for i in at_ci if at_ci[i] != after[i]}
    assert all(s in ("retired", "live") for pair in differ.values() for s in pair), differ
    assert not [i for i in RUNNER_LINES + WORDINGS if at_ci[i] == "stale"]


# ggml / llama.cpp lines in ollama's own copy: flat under llama/ from v0.3.13 (llama/ggml.h, llama/llama.cpp,
# llama/ggml-cuda.cu; llama/ggml-cuda/ggml-cuda.cu and llama/ggml-backend-reg.cpp from v0.5.2-rc0), under
# ml/backend/ggml/ggml and llama/llama.cpp from v0.5.8-rc0; no copy before v0.3.13 (unknown there)
VENDORED = ("ggml-cuda-found", "ggml-cuda-init-failed", "ggml-load-backend", "native-crash", "llama-model-load-failed")
VENDORED_LIVE_AT = {
    "v0.3.13": set(VENDORED) - {"ggml-load-backend"},
    "v0.5.1": set(VENDORED) - {"ggml-load-backend"},
    "v0.5.2-rc0": set(VENDORED),
    "v0.5.7": set(VENDORED),
    "v0.5.8-rc0": set(VENDORED),
}


@pytest.mark.parametrize("tag", VENDORED_LIVE_AT)
def test_vendored_ggml_lines_are_live_in_every_layout(upstream_env, capsys, tag):
    found = check(capsys, tag)
    assert_live_exactly(found, VENDORED, VENDORED_LIVE_AT[tag])


# Issue 31's discovery lines of Ollama's own code (git grep at every tag around each boundary): v0.1.29 adds the
# "no compatible rocm library", hipMemGetInfo and override-skip lines (the skip at DEBUG, in the message, until it
# became an attribute), v0.1.49-rc4 "no compatible GPUs were discovered", v0.12.4-rc0's new discovery drops all four
ISSUE31 = (
    "ollama-override-skips-check",
    "ollama-no-rocm-library",
    "ollama-hip-meminfo-failed",
    "ollama-no-compatible-gpus",
)
ISSUE31_LIVE_AT = {
    "v0.1.28": set(),
    "v0.1.29": set(ISSUE31) - {"ollama-no-compatible-gpus"},
    "v0.1.49-rc3": set(ISSUE31) - {"ollama-no-compatible-gpus"},
    "v0.1.49-rc4": set(ISSUE31),
    "v0.12.3": set(ISSUE31),
    "v0.12.4-rc0": set(),
}


@pytest.mark.parametrize("tag", ISSUE31_LIVE_AT)
def test_issue31_discovery_lines_are_live_exactly_where_printed(upstream_env, capsys, tag):
    found = check(capsys, tag)
    assert_live_exactly(found, ISSUE31, ISSUE31_LIVE_AT[tag])
