"""Trace rule files: schema errors with file:line, cross-checks at load, the shipped rules."""

from __future__ import annotations

import textwrap

import pytest

from gfxgate.errors import RuleError
from gfxgate.sources.resolve import load_pins
from gfxgate.trace.hops import KINDS
from gfxgate.trace.rules import OUTPUTS, load_rule_file, load_trace_rules

GOOD = """\
version: 1
id: demo
option: demo
title: demo
stages:
  - id: client
    title: client
    hops:
      - {id: a, kind: python-field, repo: ollama-python, paths: ["x/*.py"], class: Options, field: "{option}", bind: {key: key}}
  - id: sink
    title: sink
    sink: true
    hops:
      - {id: b, kind: c-field, repo: llama.cpp, paths: ["include/llama.h"], field: "{key}"}
"""


def _write(tmp_path, text, name="demo.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _known():
    pins = load_pins()
    return set(pins.sources) | set(pins.layouts)


def test_shipped_rules_load_and_cover_the_five_options():
    rules = load_trace_rules(known_repos=_known())
    assert set(rules.traces) == {"num_gpu", "num_ctx", "num_thread", "main_gpu", "use_mmap"}
    assert rules.env is not None and "ollama" in rules.env.repos
    for rule in rules.traces.values():
        assert sum(s.sink for s in rule.stages) == 1
        assert rule.stages[0].id == "client"


def test_every_hop_kind_has_a_module_and_outputs():
    assert set(KINDS) == set(OUTPUTS)
    import json

    from gfxgate.resources import schemas_dir

    schema = json.loads((schemas_dir() / "trace.schema.json").read_text())
    assert set(schema["$defs"]["hop"]["properties"]["kind"]["enum"]) == set(KINDS)


def test_good_rule_loads(tmp_path):
    rule = load_rule_file(_write(tmp_path, GOOD), _known())
    assert [h.id for s in rule.stages for r in s.routes for h in r.hops] == ["a", "b"]


def test_schema_error_names_file_and_line(tmp_path):
    bad = GOOD.replace("kind: c-field", "kind: c-feild")
    path = _write(tmp_path, bad)
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    line = bad.splitlines().index(next(l for l in bad.splitlines() if "c-feild" in l)) + 1
    assert f"{path}:{line}:" in str(info.value)


def test_missing_required_parameter_of_a_kind(tmp_path):
    path = _write(tmp_path, GOOD.replace(', field: "{key}"', ""))
    with pytest.raises(RuleError, match="'field' is a required property"):
        load_rule_file(path)


def test_unbound_variable_is_an_error_at_load(tmp_path):
    path = _write(tmp_path, GOOD.replace('field: "{key}"', 'field: "{nothing}"'))
    with pytest.raises(RuleError, match=r"uses \{nothing\}, which no earlier hop binds") as info:
        load_rule_file(path)
    assert f"{path}:" in str(info.value)


def test_unknown_output_and_unknown_repo(tmp_path):
    with pytest.raises(RuleError, match="cannot bind flag"):
        load_rule_file(_write(tmp_path, GOOD.replace("bind: {key: key}", "bind: {key: flag}")))
    with pytest.raises(RuleError, match="unknown repo 'olama'"):
        load_rule_file(_write(tmp_path, GOOD.replace("repo: ollama-python", "repo: olama")), _known())


def test_duplicate_hop_and_sink_count(tmp_path):
    with pytest.raises(RuleError, match="duplicate hop id 'a'"):
        load_rule_file(_write(tmp_path, GOOD.replace("{id: b,", "{id: a,")))
    with pytest.raises(RuleError, match="exactly one stage must be the sink"):
        load_rule_file(_write(tmp_path, GOOD.replace("    sink: true\n", "")))


def test_paths_cannot_escape_and_yaml_is_safe(tmp_path):
    with pytest.raises(RuleError, match="escapes the source root"):
        load_rule_file(_write(tmp_path, GOOD.replace('["x/*.py"]', '["x/../../etc/*.py"]')))
    with pytest.raises(RuleError, match="invalid YAML"):
        load_rule_file(_write(tmp_path, GOOD + "evil: !!python/object/apply:os.system ['true']\n"))


def test_two_rules_for_one_option(tmp_path):
    _write(tmp_path, GOOD, "a.yaml")
    _write(tmp_path, GOOD.replace("id: demo", "id: demo2"), "b.yaml")
    with pytest.raises(RuleError, match="already traced"):
        load_trace_rules(tmp_path)
