"""The shipped trace rules against the fixture repositories, at every fixture version."""

from __future__ import annotations

import pytest

from gfxgate.trace import load_trace_rules, trace_option
from gfxgate.trace.hops import HopContext
from gfxgate.trace.model import FOUND, MISSING
from tests.trace import fixtures as fx
from tests.trace.helpers import where

SUMMARY = ["client", "cli-help", "server", "runner-bridge", "llama-cpp"]


def _trace(sources, option, **refs):
    return trace_option(load_trace_rules().traces[option], sources(**refs))


def test_num_gpu_five_stages_at_the_seed_version(sources):
    result = _trace(sources, "num_gpu")
    summary = [s for s in result.stages if s.spec.summary]
    assert [s.spec.id for s in summary] == SUMMARY
    assert all(s.status == FOUND for s in result.stages)
    assert str(result.stage("client").anchor.location) == where(
        "ollama-python", "v0.6.1", "ollama/_types.py", fx.TYPES_PY, "num_gpu:"
    )
    server_go = fx.SERVER_GO.replace("{numgpu}", "NumGPU")
    help_go = fx.INTERACTIVE_GO.replace("{gpuhelp}", fx.GPU_HELP)
    assert str(result.stage("cli-help").anchor.location) == where(
        "ollama", "v0.17.5", "cmd/interactive.go", help_go, "parameter num_gpu"
    )
    assert result.stage("cli-help").meaning.meaning == "The number of layers to send to the GPU"
    server = result.stage("server")
    assert str(server.anchor.location) == where("ollama", "v0.17.5", "llm/server.go", server_go, ":= assignLayers(")
    assert server.found[1].symbol == "assignLayers(requestedLayers)"
    assert server.found[1].meaning.startswith("assignLayers places up to requestedLayers")
    bridge = result.stage("runner-bridge")
    assert bridge.via.startswith("cgo")
    assert str(bridge.anchor.location) == where(
        "ollama", "v0.17.5", "llama/llama.go", fx.LLAMA_GO, "cparams.n_gpu_layers"
    )
    sink = result.stage("llama-cpp").anchor
    assert str(sink.location) == where(
        "ollama", "v0.17.5", "llama/llama.cpp/include/llama.h", fx.LLAMA_H, "n_gpu_layers;"
    )
    assert sink.meaning == "number of layers to store in VRAM" and sink.meaning_source == "trailing comment"
    assert "not a number of GPUs" in result.conclusion and "number of layers to store in VRAM" in result.conclusion
    assert "num_gpu ≥ 2 does not mean multi-GPU" in result.caution
    assert any("vendored in ollama@v0.17.5 under llama/llama.cpp/" in n for n in result.notes)


def test_logging_calls_and_conversions_are_not_the_callee(sources):
    hop = _trace(sources, "num_gpu").stage("server").found[0]
    assert "slog.Info" not in hop.code and "uint64(" not in hop.code
    assert hop.symbol.endswith("assignLayers(argument 2)")


def test_lines_moved_and_go_field_renamed_behind_the_same_json_tag(sources):
    before, after = _trace(sources, "num_gpu"), _trace(sources, "num_gpu", ollama="v0.18.0")
    assert all(s.status == FOUND for s in after.stages)
    assert after.stage("api").anchor.symbol.startswith("Runner.GPULayers")
    assert "s.options.GPULayers" in after.stage("server").anchor.code
    for stage in ("cli-help", "server", "runner-bridge"):
        old, new = before.stage(stage).anchor.location, after.stage(stage).anchor.location
        assert (new.path, new.line, new.ref) == (old.path, old.line + fx.MOVED_BY, "v0.18.0")
    # the vendored header did not move: its line stays
    assert after.stage("llama-cpp").anchor.location.line == before.stage("llama-cpp").anchor.location.line


def test_moved_file_and_removed_help_are_reported_missing_with_reasons(sources):
    result = _trace(sources, "num_gpu", ollama="v0.19.0")
    help_stage = result.stage("cli-help")
    assert (
        help_stage.status == MISSING and "occurs nowhere in cmd/**/*.go at ollama@v0.19.0" in help_stage.hops[0].reason
    )
    bridge = result.stage("runner-bridge")
    assert bridge.status == MISSING
    cgo = next(h for h in bridge.hops if h.id == "bridge-cgo")
    assert "no file matches llama/*.go" in cgo.reason and "llama/bridge/bridge.go" in cgo.reason
    sink = result.stage("llama-cpp")
    assert (
        sink.status == MISSING
        and "needs the c_field that hop" in sink.hops[0].reason
        and "{" not in sink.hops[0].reason
    )
    assert result.conclusion is None and "was not reached" in result.conclusion_reason
    # nothing invented: no found hop without a location, no missing hop without a reason
    assert all((h.location is not None) == (h.status == FOUND) for h in result.hops)
    assert all(h.reason for h in result.hops if h.status == MISSING)


def test_llama_server_flag_into_the_argument_parser_and_struct(sources):
    result = _trace(sources, "num_gpu", ollama="v0.30.0")
    bridge = result.stage("runner-bridge")
    assert bridge.via.startswith("llama-server") and bridge.status == FOUND
    flag, option, sets = bridge.hops
    assert flag.symbol.startswith("-ngl ") and str(flag.location) == where(
        "ollama", "v0.30.0", "llm/llama_server.go", fx.LLAMA_SERVER_GO, '"-ngl"'
    )
    assert str(option.location) == where("llama-cpp", "b100", "common/arg.cpp", fx.ARG_CPP, '"-ngl"')
    assert (
        option.meaning.startswith("max. number of layers to store in VRAM") and option.meaning_source == "help string"
    )
    assert str(sets.location) == where("llama-cpp", "b100", "common/arg.cpp", fx.ARG_CPP, "params.n_gpu_layers = -1")
    sink = result.stage("llama-cpp").anchor
    assert sink.symbol == "common_params.n_gpu_layers"
    assert "not a number of GPUs" in result.conclusion
    assert any("llama-cpp@b100 (named by ollama@v0.30.0:LLAMA_CPP_VERSION)" in n for n in result.notes)


def test_llama_cpp_not_available_is_a_reason_not_a_guess(sources, monkeypatch, tmp_path):
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(tmp_path / "no-such-clone"))
    result = _trace(sources, "num_gpu", ollama="v0.30.0")
    arg = next(h for h in result.hops if h.id == "llama-arg")
    assert arg.status == MISSING and arg.reason.startswith("source not available")
    assert "LLAMA_CPP_VERSION" in arg.reason
    assert result.stage("llama-cpp").status == MISSING and "source not available" in result.conclusion_reason
    assert result.stage("client").status == FOUND  # the rest still traces


@pytest.mark.parametrize(
    "option, sink_field, sink_doc",
    [
        ("num_ctx", "llama_context_params.n_ctx", "text context, 0 = from model"),
        ("num_thread", "llama_context_params.n_threads", "number of threads to use for generation"),
        (
            "main_gpu",
            "llama_model_params.main_gpu",
            "the GPU that is used for the entire model when split_mode is LLAMA_SPLIT_MODE_NONE",
        ),
        ("use_mmap", "llama_model_params.use_mmap", "use mmap if possible"),
    ],
)
def test_other_options_trace_from_rule_files_alone(sources, option, sink_field, sink_doc):
    result = _trace(sources, option)
    assert all(s.status == FOUND for s in result.stages), [(h.id, h.reason) for h in result.hops if h.reason]
    sink = result.stage("llama-cpp").anchor
    assert sink.symbol == sink_field and sink.meaning == sink_doc
    assert sink_doc in result.conclusion
    assert result.stage("client").anchor.location.path == "ollama/_types.py"


def test_http_json_boundary_follows_tags_on_both_sides(sources):
    result = _trace(sources, "num_thread")
    sends, field, use = [h for h in result.hops if h.id.startswith("load-request")]
    assert "JSON key 'num_threads'" in sends.symbol
    assert str(sends.location) == where("ollama", "v0.17.5", "llm/server.go", fx.SERVER_GO, "loadRequest.NumThreads =")
    # the receiver's field has another Go name; only the json tag links them
    assert field.symbol == "loadRequest.Threads"
    assert str(field.location) == where(
        "ollama", "v0.17.5", "runner/llamarunner/runner.go", fx.RUNNER_GO, 'json:"num_threads"'
    )
    assert field.meaning == "decoded from the server's NumThreads"
    assert use.symbol == "req.Threads in load()"
    param = next(h for h in result.hops if h.id == "runner-param")
    assert param.symbol == "loadModel(threads)"


def test_flags_for_other_options_after_v0_30(sources):
    result = _trace(sources, "num_ctx", ollama="v0.30.0")
    assert result.stage("server").via == "llama-server command line"
    assert result.stage("runner-bridge").found[0].symbol == "{-c, --ctx-size}"
    assert result.stage("llama-cpp").anchor.symbol == "common_params.n_ctx"


def test_python_client_shapes(sources):
    typed = _trace(sources, "num_gpu", ollama_python="v0.4.0").stage("client").anchor
    assert str(typed.location) == where(
        "ollama-python", "v0.4.0", "ollama/_types.py", fx.TYPES_TYPEDDICT_PY, "num_gpu: int"
    )
    assert typed.meaning == "load time options" and typed.meaning_source == "leading comment"
    dataclass = _trace(sources, "num_gpu", ollama_python="v0.5.0").stage("client").anchor
    assert dataclass.meaning == "How many layers go to the GPU." and dataclass.meaning_source == "attribute docstring"
    renamed = _trace(sources, "num_gpu", ollama_python="v0.7.0")
    client = renamed.stage("client")
    assert client.status == MISSING and "not as a field of class Options" in client.hops[0].reason
    # the JSON key cannot be derived, so the API hop says what it needs
    assert "needs the json_key that hop" in renamed.stage("api").hops[0].reason
    described = _trace(sources, "num_thread").stage("client").anchor
    assert described.meaning == "CPU threads for generation" and described.meaning_source == "Field(description=…)"


def test_each_file_is_parsed_once_per_run(sources):
    ss = sources()
    ctx = HopContext(ss)
    rules = load_trace_rules().traces
    first = trace_option(rules["num_gpu"], ss, ctx)
    second = trace_option(rules["num_gpu"], ss, ctx)
    assert first.parsed_files > 0 and second.parsed_files == 0
    assert [str(h.location) for h in first.hops] == [str(h.location) for h in second.hops]
    assert ctx.cache.parsed == len({k for k, v in ctx.cache._files.items() if v is not None})
