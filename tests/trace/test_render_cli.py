"""Formatters (Markdown, JSON against its schema, text, Mermaid, DOT) and the `gfxgate trace` command."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gfxgate.cli import main
from gfxgate.resources import schemas_dir
from gfxgate.trace import load_trace_rules, search_env, trace_option
from gfxgate.trace.render import FORMATS, Graph, dot, mermaid, render, render_graph


def _schema():
    return json.loads((schemas_dir() / "trace-result.schema.json").read_text(encoding="utf-8"))


def _run(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main(["trace", "--offline", *args])
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.fixture
def result(sources):
    return trace_option(load_trace_rules().traces["num_gpu"], sources())


def test_every_format_and_graph_has_a_renderer(result):
    for fmt in FORMATS:
        assert render(result, fmt.value).strip()
    for kind in Graph:
        assert render_graph(result, kind.value).strip()


def test_markdown_summary_table_has_one_row_per_summary_stage(result):
    text = render(result, "md")
    summary = text.split("## Summary")[1].split("## All hops")[0]
    rows = [l for l in summary.splitlines() if l.startswith("| ") and not l.startswith("| stage")]
    assert len(rows) == sum(s.spec.summary for s in result.stages)
    for stage, row in zip([s for s in result.stages if s.spec.summary], rows):
        assert row.startswith(f"| {stage.spec.title} | `{stage.anchor.location}` |")  # a location is a code span
    assert "number of layers to store in VRAM" in text and "**Caution:**" in text
    hops = text.split("## All hops")[1]
    assert len([l for l in hops.splitlines() if l.startswith("| ") and l[2].isdigit()]) == len(result.hops)


def test_json_is_versioned_deterministic_and_valid(sources, result):
    first = render(result, "json")
    again = render(trace_option(load_trace_rules().traces["num_gpu"], sources()), "json")
    assert first == again
    data = json.loads(first)
    jsonschema.validate(data, _schema())
    assert data["schema_version"] == 1 and data["kind"] == "trace" and data["generator"].startswith("gfxgate ")
    assert list(data)[:3] == ["schema_version", "kind", "generator"] and "version" not in data
    assert [s["id"] for s in data["stages"] if s["summary"]] == [
        "client",
        "cli-help",
        "server",
        "runner-bridge",
        "llama-cpp",
    ]
    assert all(h["where"] for s in data["stages"] for h in s["hops"] if h["status"] == "found")


def test_missing_hops_render_and_validate(sources):
    missing = trace_option(load_trace_rules().traces["num_gpu"], sources(ollama="v0.19.0"))
    data = json.loads(render(missing, "json"))
    jsonschema.validate(data, _schema())
    assert data["conclusion"] is None and data["conclusion_reason"]
    md = render(missing, "md")
    assert "**No conclusion:**" in md and "**missing**" in md
    assert "MISSING:" in render(missing, "text")
    assert ":::missing" in mermaid(missing) and "style=dashed" in dot(missing)


def test_graphs_draw_every_hop(result):
    text = mermaid(result)
    assert text.startswith("flowchart TD")
    nodes = [l for l in text.splitlines() if '["' in l]
    assert len(nodes) == len(result.hops) + sum(len(h.also) for h in result.hops)
    assert len(nodes) > 5  # more than the summary stages
    graph = dot(result)
    assert graph.startswith('digraph "num_gpu"') and graph.count(" -> ") == len(nodes) - 1
    assert '"' not in text.split('["', 1)[1].split('"]', 1)[0]  # labels are escaped


def test_env_renders_and_validates(sources):
    search = search_env(sources(), "HSA_OVERRIDE_GFX_VERSION")
    jsonschema.validate(json.loads(render(search, "json")), _schema())
    md = render(search, "md")
    assert md.count("| envconfig |") == 1 and "**envconfig**" in md
    assert all(str(r.location) in md for r in search.reads)
    assert str(search.reads[0].location) in render(search, "text")


def test_cli_trace_and_env(trace_env, capsys, tmp_path):
    study = ("--ref", "ollama=v0.17.5")  # the fixture repositories are at the seed study's versions (pin set study)
    code, out, err = _run(capsys, "num_gpu", *study, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["conclusion"].startswith("num_gpu is a number of model layers")
    code, out, err = _run(capsys, "num_gpu", "--ref", "ollama=v0.30.0", "--graph", "dot")
    assert code == 0 and "-ngl" in out
    code, out, err = _run(capsys, "--env", "HSA_OVERRIDE_GFX_VERSION", *study, "--format", "text")
    assert code == 0 and "envconfig" in out
    target = tmp_path / "trace.md"
    code, out, err = _run(capsys, "num_ctx", *study, "-o", str(target))
    assert code == 0 and target.read_text().startswith("# num_ctx")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["num_gpus"], "did you mean num_gpu"),
        ([], "name either an option or --env"),
        (["num_gpu", "--env", "X"], "name either an option or --env"),
        (["--env", "X", "--graph", "dot"], "does not apply to --env"),
        (["num_gpu", "--ref", "olama=v1"], "unknown source name"),
    ],
)
def test_cli_usage_errors(trace_env, capsys, args, fragment):
    code, out, err = _run(capsys, *args)
    assert code == 2 and fragment in err


@pytest.mark.parametrize("option, name", [("--source", "llama.cpp"), ("--ref", "ggml")])
def test_a_layout_named_as_a_source_names_the_sources_that_hold_it(trace_env, capsys, option, name):
    """ggml and llama.cpp are layouts (read inside ollama, or from llama-cpp): the error says so and the hint names
    sources that --source/--ref accept (it once suggested 'llama.cpp' itself for 'llama.cpp')."""
    code, out, err = _run(capsys, "num_gpu", option, f"{name}=v1")
    error, hint = err.strip().splitlines()
    assert code == 2 and error.startswith(f"gfxgate: error: '{name}' is not a source: gfxgate reads it inside ollama (")
    assert hint == "  hint: name the source that holds it: llama-cpp or ollama"


def test_cli_unknown_tag_and_bad_rules(trace_env, capsys, tmp_path):
    code, _, err = _run(capsys, "num_gpu", "--ref", "ollama=v9.9.9")
    assert code == 4 and "unknown tag" in err
    (tmp_path / "bad.yaml").write_text("version: 1\nid: x\ntitle: x\noption: x\nstages: []\n", encoding="utf-8")
    code, _, err = _run(capsys, "x", "--rules", str(tmp_path))
    assert code == 3 and f"{tmp_path / 'bad.yaml'}:5:" in err


def test_cli_env_with_rules_that_have_no_env_search(trace_env, capsys, tmp_path):
    """--env with a --rules folder of option traces only: a usage error naming what is missing (was an
    AttributeError traceback: the repositories to open were read from the absent env rule)."""
    import shutil

    shutil.copy(load_trace_rules().traces["num_gpu"].defined_in, tmp_path / "num_gpu.yaml")
    code, out, err = _run(capsys, "--env", "HSA_OVERRIDE_GFX_VERSION", "--rules", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.startswith(
        "gfxgate: error: no environment-variable search rule (rules/traces/*.yaml with an env: section)"
    )


def test_a_trace_without_llama_cpp_is_partial_and_says_where_it_stops(trace_env, capsys, monkeypatch, tmp_path):
    """Issue 36 item 7: without a llama.cpp clone, the hops in ollama-python and ollama are still the answer (exit 0),
    the llama.cpp hops are missing with the reason, and a note names the --source to give. It used to exit 5 with
    nothing printed. With none of the chain's repositories readable it is still exit 5 (nothing to answer from)."""
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(tmp_path / "no-llama-cpp-here"))
    code, out, err = _run(capsys, "num_gpu", "--ref", "ollama=v0.30.0", "--offline", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    hops = {h["id"]: h for s in data["stages"] for h in s["hops"]}
    assert hops["client-field"]["status"] == "found" and hops["api-field"]["status"] == "found"
    assert hops["bridge-flag"]["status"] == "found" and "-ngl" in hops["bridge-flag"]["code"]
    assert hops["sink-field"]["status"] == "missing" and "llama" in hops["sink-field"]["reason"]
    assert data["conclusion"] is None and "was not reached" in data["conclusion_reason"]
    assert any(
        n.startswith("partial trace: llama-cpp cannot be read") and "--source llama-cpp=CLONE" in n
        for n in data["notes"]
    ), data["notes"]
    for name in ("OLLAMA", "OLLAMA_PYTHON"):
        monkeypatch.setenv(f"GFXGATE_SOURCE_{name}", str(tmp_path / "missing"))
    code, out, err = _run(capsys, "num_gpu", "--offline")
    assert code in (4, 5) and out == "" and "nothing to answer from" in err
