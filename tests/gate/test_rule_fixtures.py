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
from tests.gate.rule_fixtures import FIXTURES, OneSource, assert_expectations, cases, read_case


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


@pytest.mark.parametrize("case", ["ollama-discovery-rocm-smi/v0.1.20", "ollama-discovery-gfx9-minimum-only/v0.1.27"])
def test_discovery_before_the_allowlist_has_no_rule_that_lost_its_layout(case, tmp_path):
    """Before v0.1.29 discovery is gpu/gpu.go alone (rocm_smi, then `v.Major < 9`): the allowlist, "not supported" and
    deep-probe rules do not apply there (their constructs come later), so none may say "upstream layout changed?" —
    every discovery rule decides or is not applicable, and the cell is decided."""
    from gfxgate.gate.engine import NOT_APPLICABLE

    facts, cell = _layer_at(case, "discovery", "ollama", tmp_path)
    for rid in (
        "ollama-discovery-rocblas-allowlist",
        "ollama-discovery-unsupported-rejection",
        "ollama-discovery-deep-init-probe",
    ):
        assert facts[rid].state == NOT_APPLICABLE and facts[rid].reason.startswith("applies to ollama >="), facts[rid]
    assert cell.status.value == "allowed", (cell.summary, cell.reason)


def _layer_at(case: str, layer: str, repo: str, tmp_path):
    """The facts of ``layer``'s rules on a fixture case read as ``repo`` at the case's ref, and gfx900's cell;
    asserts that every rule decides or is not applicable (none says "upstream layout changed?")."""
    from gfxgate.gate.engine import MATCHED, NOT_APPLICABLE, build_matrix
    from gfxgate.targets import catalog

    ruleset = default_rules()
    rules = RuleSet(layers=ruleset.layers, rules=tuple(r for r in ruleset.rules if r.layer == layer))
    read_case(FIXTURES / case, tmp_path)
    facts = collect_facts(rules, OneSource(DirectorySource(repo, tmp_path, ref=case.split("/")[1])))
    assert {rid: f.reason for rid, f in facts.items() if f.state not in (MATCHED, NOT_APPLICABLE)} == {}
    cat = catalog()
    return facts, build_matrix(rules, facts, [cat.parse("gfx900")], cat).cells[(layer, "gfx900")]


@pytest.mark.parametrize("case", ["rocm-docs-gpu-list-elsewhere/rocm-6.0.2", "rocm-docs-gpu-list-elsewhere/rocm-6.1.0"])
def test_rocm_docs_without_a_gpu_list_say_where_it_is(case, tmp_path):
    """rocm-6.0.2 and rocm-6.1.0 have neither the Markdown tables nor the compatibility matrix: no official-matrix rule
    may say "upstream layout changed?" there. The cell stays unknown; its reason is the link the docs give to the list
    (ROCm/rocm-install-on-linux), its evidence the line that gives it."""
    _, cell = _layer_at(case, "official-matrix", "rocm-docs", tmp_path)
    assert cell.status.value == "unknown", (cell.summary, cell.reason)
    # the rule's own summary, not the bare word "unknown" (the text matrix shows the summary and the evidence only)
    assert cell.summary.startswith("no GPU support list in the ROCm repository at this version"), cell.summary
    assert "layout changed" not in cell.reason and "rocm-install-on-linux:reference/system-requirements" in cell.reason
    assert [(e.location.path, e.location.line) for e in cell.evidence] == [("docs/about/compatibility/openmp.md", 13)]
