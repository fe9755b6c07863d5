"""Hop kinds and documentation helpers on their own: small sources parsed with tree-sitter,
and rules written in the test against the fixture repositories (negative cases included)."""

from __future__ import annotations

import textwrap

import pytest

from gfxgate.trace.engine import fill, Unbound, trace
from gfxgate.trace.hops import HopContext
from gfxgate.trace.model import FOUND, MISSING
from gfxgate.trace.rules import load_rule_file
from gfxgate.trace.syntax import ParsedFile, clean_comment, leading_comment, parser, trailing_comment


def _parsed(src: str, language: str, path: str = "x") -> ParsedFile:
    data = src.encode()
    return ParsedFile("repo", path, data, parser(language).parse(data), language)


def _first(pf: ParsedFile, node_type: str):
    return next(pf.walk({node_type}))


def test_comment_markers_are_removed():
    assert clean_comment("// number of layers") == "number of layers"
    assert clean_comment("/* a\n * b */") == "a b"
    assert clean_comment("#  python") == "python"


def test_trailing_comment_ignores_markers_inside_strings():
    pf = _parsed('package x\n\nvar a = "http://host" // the host\nvar b = "no // comment"\n', "go")
    first, second = list(pf.walk({"var_declaration"}))
    assert trailing_comment(pf, first) == "the host"
    assert trailing_comment(pf, second) is None


def test_leading_comment_block_stops_at_code_or_blank_line():
    src = "struct s {\n    int a; // a's doc\n\n    // the GPU\n    // used for scratch\n    int main_gpu;\n};\n"
    pf = _parsed(src, "cpp")
    fields = list(pf.walk({"field_declaration"}))
    assert leading_comment(pf, fields[1]) == "the GPU used for scratch"
    assert leading_comment(pf, fields[0]) is None
    assert trailing_comment(pf, fields[0]) == "a's doc"


def test_fill_escapes_regex_parameters_and_drops_unbound_list_items():
    assert fill("^{x}$", {"x": "a.b"}, regex=True) == r"^a\.b$"
    assert fill(["{x}", "fixed"], {}) == ["fixed"]
    with pytest.raises(Unbound):
        fill("{x}", {})


RULE = """\
version: 1
id: probe
option: num_gpu
title: probe
stages:
{stages}
  - id: sink
    title: sink
    sink: true
    hops:
      - {{id: sink, kind: c-field, repo: llama.cpp, paths: ["include/llama.h"], field: n_gpu_layers, structs: ["llama_model_params"]}}
"""


def _probe(tmp_path, sources, stages: str, **refs):
    path = tmp_path / "probe.yaml"
    path.write_text(RULE.format(stages=textwrap.indent(textwrap.dedent(stages), "  ")), encoding="utf-8")
    return trace(load_rule_file(path), sources(**refs), HopContext(sources(**refs)))


def test_go_json_field_struct_filter(tmp_path, sources):
    found = _probe(
        tmp_path,
        sources,
        """\
        - id: api
          title: api
          hops:
            - {id: a, kind: go-json-field, repo: ollama, paths: ["api/*.go"], json: num_gpu, struct: Runner}
        """,
    )
    assert found.stage("api").status == FOUND
    wrong = _probe(
        tmp_path,
        sources,
        """\
        - id: api
          title: api
          hops:
            - {id: a, kind: go-json-field, repo: ollama, paths: ["api/*.go"], json: num_gpu, struct: Options}
        """,
    )
    assert wrong.stage("api").status == MISSING and "not as a Go struct field tag" in wrong.hops[0].reason


def test_http_json_needs_a_request_struct(tmp_path, sources):
    result = _probe(
        tmp_path,
        sources,
        """\
        - id: server
          title: server
          hops:
            - {id: h, kind: http-json, repo: ollama, paths: ["llm/*.go"], value: NumCtx, struct: ^Nothing$, receiver_paths: ["runner/**/*.go"]}
        """,
    )
    assert result.stage("server").status == MISSING
    assert "none of a request struct" in result.hops[0].reason


def test_string_literal_in_python_and_missing_flag(tmp_path, sources):
    result = _probe(
        tmp_path,
        sources,
        """\
        - id: py
          title: python string
          hops:
            - {id: s, kind: string-literal, repo: ollama-python, paths: ["ollama/*.py"], pattern: '^OLLAMA_HOST$'}
        - id: flag
          title: flag
          hops:
            - {id: f, kind: arg-parser, repo: llama.cpp, paths: ["common/arg.cpp"], flag: "--no-such-flag"}
        """,
        ollama="v0.30.0",
    )
    assert result.stage("py").anchor.location.path == "ollama/_client.py"
    assert result.stage("flag").status == MISSING and "--no-such-flag" in result.stage("flag").hops[0].reason


def test_go_call_param_position_beyond_the_parameters(tmp_path, sources):
    result = _probe(
        tmp_path,
        sources,
        """\
        - id: p
          title: param
          hops:
            - {id: p, kind: go-call-param, repo: ollama, paths: ["llm/*.go"], function: assignLayers, index: 5}
        """,
    )
    assert "has 2 parameter(s)" in result.hops[0].reason


def test_c_field_prefers_the_listed_struct_order(tmp_path, sources):
    result = _probe(
        tmp_path,
        sources,
        """\
        - id: c
          title: common
          hops:
            - {id: c, kind: c-field, repo: llama.cpp, paths: ["include/llama.h", "common/common.h"], field: n_gpu_layers, structs: ["common_params", "llama_model_params"]}
        """,
        ollama="v0.30.0",
    )
    hop = result.stage("c").anchor
    assert hop.symbol == "common_params.n_gpu_layers" and len(hop.also) == 1
