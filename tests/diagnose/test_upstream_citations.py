"""Opt-in (issue 39): every entry of rules/messages.yaml against the real upstream trees.

GFXGATE_TEST_UPSTREAM names a folder holding ``ollama`` (a clone of ollama/ollama with its tags), ``llama.cpp``
(``vendor/llama.cpp`` of the llama-cpp-python 0.3.36 sdist: ``pip download --no-binary :all: --no-deps
llama-cpp-python==0.3.36``; ggml-org/llama.cpp is too large to clone here) and, optionally, ``clr`` (ROCm/clr).
Without it these tests are deselected, not counted as passing.

1. Each entry's ``printed_by`` search specs, through ``gfxgate messages`` at the ollama tags of :data:`TAGS`
   (llama.cpp-only lines in the llama.cpp tree): never stale at any tag, and live at one tag at least — or
   ``not_available`` (its printer is not among gfxgate's sources).
2. Each ``file:line`` the catalogue cites in a comment (``ml/device.go:629 at v0.17.5``, ``ggml/src/ggml-alloc.c:1134``
   of the llama.cpp tree) is the printing code: the cited line (or range) holds a fragment the comment quotes, a
   code token it names, the entry's literal, or a match of its ``printed_by`` grep.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from gfxgate.cli import main

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]
ROOT = Path(__file__).resolve().parents[2]
# one tag per era of Ollama's printing code: v0.1.29 (the first discovery lines), v0.1.32 (the runner subprocess),
# v0.1.34, v0.1.45-rc2 (llama.cpp a submodule), v0.3.13 (ggml flat under llama/), v0.5.7 (llama/ggml-cuda/), v0.12.3
# (the old discovery), v0.17.5 (the runner discovery, Vulkan), v0.30.0, v0.32.15 (llama-server), v0.33.0-rc2
TAGS = (
    "v0.1.29",
    "v0.1.32",
    "v0.1.34",
    "v0.1.45-rc2",
    "v0.3.13",
    "v0.5.7",
    "v0.12.3",
    "v0.17.5",
    "v0.30.0",
    "v0.32.15",
    "v0.33.0-rc2",
)
NO_GGML_COPY = {
    "v0.1.29",
    "v0.1.32",
    "v0.1.34",
    "v0.1.45-rc2",
}  # llama.cpp was a git submodule: ggml lines unknown there
LLAMA_CPP_DIRS = {"ggml", "src", "common", "tools", "examples", "include"}
_CITE = re.compile(r"(?<![\w/.])(?P<path>(?:[\w.-]+/)*[\w.-]+\.(?:go|c|cpp|cu|cuh|h))?:(?P<line>\d+)(?:-(?P<end>\d+))?")
_TAG = re.compile(r"\bat (v\d+\.\d+\.\d+(?:-[\w.]+)?)")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)+)"')
_CODE = re.compile(
    r"[A-Za-z_][\w.]*\([^()]*(?:\([^()]*\))?[^()]*\)|[A-Za-z_]\w*(?:\.\w+)+|[A-Za-z]\w*_\w+|[A-Z][a-z]+[A-Z]\w+"
)
_VERB = re.compile(r"%[-+# 0-9.]*[a-zA-Z]|<[^>]*>|…")


@pytest.fixture(scope="module")
def upstream():
    root = Path(UPSTREAM or ".")
    if not (root / "ollama").exists() or not (root / "llama.cpp" / "ggml").is_dir():
        pytest.skip("needs GFXGATE_TEST_UPSTREAM/ollama and GFXGATE_TEST_UPSTREAM/llama.cpp")
    return root


@pytest.fixture
def upstream_sources(upstream, monkeypatch):
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(upstream / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(upstream / "llama.cpp"))
    if (upstream / "clr").exists():
        monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(upstream / "clr"))
    return upstream


def messages_at(capsys, tag: str) -> dict[str, dict]:
    with pytest.raises(SystemExit) as info:
        main(["messages", "--format", "json", "--offline", "--ref", f"ollama={tag}"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    return {m["id"]: m for m in json.loads(out)["messages"]}


def test_every_entry_is_printed_where_its_printed_by_says(upstream_sources, capsys):
    states: dict[str, dict[str, str]] = {}
    for tag in TAGS:
        for mid, m in messages_at(capsys, tag).items():
            states.setdefault(mid, {})[tag] = m["state"]
            assert m["state"] != "stale", (tag, mid, m["summary"])
            if m["state"] == "unknown":  # only where the printer's tree does not exist at that tag
                assert tag in NO_GGML_COPY or "clr" in m["summary"], (tag, mid, m["summary"])
    from gfxgate.diagnose.catalogue import default_catalogue

    catalogue = default_catalogue()
    assert set(states) == {m.id for m in catalogue.messages}
    for message in catalogue.messages:
        if message.printed_by:
            assert "live" in states[message.id].values(), (message.id, states[message.id])
        else:
            assert set(states[message.id].values()) == {"not-available"}, message.id
    print(
        f"{len(states)} entries at {', '.join(TAGS)} and the llama.cpp tree: "
        f"{sum('live' in s.values() for s in states.values())} live at one tag at least"
    )


def citations() -> list[tuple[str, int, str, int, int, str | None, str]]:
    """(message id, yaml line, path, first, last, ollama tag or None for the llama.cpp tree, the comment block) for
    every ``file:line`` in a comment of rules/messages.yaml. A comment block belongs to the entry it sits in (a
    comment at the list's indentation, to the entry after it); its first ``at vX.Y.Z`` is the tag of its ollama
    paths (a line's own ``at`` first), and a bare ``:N`` continues the path before it."""
    lines = (ROOT / "rules" / "messages.yaml").read_text(encoding="utf-8").splitlines()
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    current = ""
    top: list[tuple[int, str]] = []
    deep: list[tuple[int, str]] | None = None
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if raw.startswith("  - id:"):
            current, deep = raw.split(":", 1)[1].strip(), None
            if top:
                blocks.append((current, top))
                top = []
        elif raw.startswith("  #"):
            deep = None
            top.append((number, stripped))
        elif stripped.startswith("#"):
            if deep is None:
                deep = []
                blocks.append((current, deep))
            deep.append((number, stripped))
        else:
            deep = None
            if " # " in raw and current:
                blocks.append((current, [(number, raw.split(" # ", 1)[1])]))
    out = []
    for owner, block in blocks:
        text = " ".join(t for _, t in block)
        tag = next(iter(_TAG.findall(text)), None)
        path = None
        for number, comment in block:
            line_tag = next(iter(_TAG.findall(comment)), tag)  # a line's own "at vX" before the block's
            for m in _CITE.finditer(comment):
                path = m["path"] or path
                if path is None:
                    continue
                llama = path.split("/", 1)[0] in LLAMA_CPP_DIRS
                out.append(
                    (owner, number, path, int(m["line"]), int(m["end"] or m["line"]), None if llama else line_tag, text)
                )
    return out


def read_cited(upstream: Path, path: str, tag: str | None) -> list[str]:
    if tag is None:
        return (upstream / "llama.cpp" / path).read_text(encoding="utf-8", errors="replace").splitlines()
    proc = subprocess.run(
        ["git", "-C", str(upstream / "ollama"), "show", f"{tag}:{path}"], capture_output=True, text=True
    )
    assert proc.returncode == 0, f"{path} does not exist at ollama {tag}: {proc.stderr.strip()}"
    return proc.stdout.splitlines()


def fragments(text: str) -> set[str]:
    """What a comment says the printing line holds: the literal pieces of its quoted strings, the code it names."""
    out = set()
    for quoted in _QUOTED.findall(text):
        out |= {p for p in _VERB.split(quoted) if len(p.strip()) >= 1 and len(p) >= 3}
    out |= {
        c for c in _CODE.findall(text) if len(c) >= 6 and not c.endswith((".go", ".cpp", ".cu", ".cuh", ".c", ".h"))
    }
    return out


def test_every_cited_line_is_the_printing_code(upstream):
    from gfxgate.diagnose.catalogue import default_catalogue

    catalogue = default_catalogue()
    cited = citations()
    assert len(cited) >= 20 and {c[0] for c in cited} >= {
        "ggml-cuda-archs",
        "ollama-cuda-cc-not-compiled",
        "ollama-amdhip-dll-missing",
    }
    wrong = []
    for message_id, yaml_line, path, first, last, tag, text in cited:
        message = catalogue.by_id(message_id)
        code = read_cited(upstream, path, tag)
        span = code[first - 1 : last] if last <= len(code) else []
        greps = [re.compile(spec.grep) for spec in message.printed_by if spec.grep]
        literals = list(message.literals)
        said = fragments(text)
        held = [
            line
            for line in span
            if any(g.search(line) for g in greps)
            or any(x and x in line for x in literals)
            or any(f in line for f in said)
        ]
        if not held:
            where = f"ollama@{tag}" if tag else "llama.cpp"
            wrong.append(f"rules/messages.yaml:{yaml_line} ({message_id}): {where}:{path}:{first}-{last} is {span!r}")
    assert not wrong, "\n".join(wrong)
    print(f"{len(cited)} citations of {len({c[0] for c in cited})} entries hold their printing code")
