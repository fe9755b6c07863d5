"""Every gate rule against its fixture files, as semgrep tests a rule against its ``ruleid:`` targets.

``tests/rules/<rule-id>/<case>/`` is a small tree laid out as the rule's repository (the rule's ``paths``), made of
excerpts of real upstream files; ``<case>`` is the upstream ref the excerpt comes from (``v0.17.5``, ``rocm-6.3.3``),
which the rule's ``versions`` range sees, or a name without a version (then every rule is tried, as on a folder).
Expectations are comment lines in the fixture files themselves (see tests/rules/README.md):

* ``# ruleid: RULE-ID gfx900=blocked gfx1030=allowed`` — the rule matches and decides these statuses; when the next
  line is not blank, it is among the evidence lines of each of those targets;
* ``# ok: RULE-ID`` — the rule finds nothing here (no match, or not applicable at this version);
* ``# from: ollama@v0.17.5:CMakeLists.txt`` — where the excerpt comes from.

Any comment marker works (``#``, ``//``, ``<!--``, ``..``), also in JSON; annotation lines are blanked before the rule
reads the tree, so they can neither match nor shift line numbers.
"""

from __future__ import annotations

import re

import pytest

from gfxgate.gate.engine import collect_facts
from gfxgate.gate.ruleset import RuleSet, default_rules
from gfxgate.sources.directory import DirectorySource
from tests.core.rule_fixtures import FIXTURES, OneSource, assert_expectations, cases, read_case


@pytest.mark.parametrize("rule_id,case", cases())
def test_rule_decides_what_its_fixture_says(rule_id, case, tmp_path):
    ruleset = default_rules()
    rules = {r.id: r for r in ruleset.rules}
    assert rule_id in rules, f"tests/rules/{rule_id}: no gate rule has this id"
    rule = rules[rule_id]
    expectations = read_case(case, tmp_path)
    assert expectations, f"{case}: no ruleid:/ok: annotation"
    assert {e.rule_id for e in expectations} == {rule_id}, "annotations name the rule of their folder"
    ref = case.name if re.match(r"^(v\d|rocm-\d|b\d)", case.name) else "worktree"
    source = DirectorySource(rule.repo, tmp_path, ref=ref)
    facts = collect_facts(RuleSet(layers=ruleset.layers, rules=(rule,)), OneSource(source))[rule.id]

    def cited(e, finding):
        lines = {(h.path, h.line) for h in finding.hits}
        assert (e.path, e.evidence_line) in lines, f"{e.path}:{e.line}: the evidence is {sorted(lines)}"

    assert_expectations(rule, facts, expectations, cited)


def test_fixture_folders_hold_cases_of_gate_rules():
    """Every fixture folder is a gate rule's, with at least one case; every gate rule has one; every matcher kind
    is covered."""
    rules = {r.id: r for r in default_rules().rules}
    folders = [p for p in FIXTURES.iterdir() if p.is_dir()]
    assert sorted(p.name for p in folders if p.name not in rules) == []
    assert sorted(set(rules) - {p.name for p in folders}) == []  # a new rule comes with tests/rules/<its id>/
    assert all(any(c.is_dir() for c in p.iterdir()) for p in folders)
    covered = {rules[p.name].matcher for p in folders}
    assert sorted({r.matcher for r in rules.values()} - covered) == []  # every matcher kind has a real fixture
