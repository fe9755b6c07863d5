"""Every workaround against its fixture files: its checks at each era, and the same build command as the build row.

``tests/workarounds/<workaround-id>/<case>/`` is laid out as a rule fixture (tests/rules/README.md): excerpts of real
upstream files at the ref ``<case>``, each with a ``from:`` line. Annotations:

* ``# live: WORKAROUND-ID`` — the workaround's checks find evidence at this ref; when the next line is not blank, it is
  among that evidence;
* ``# stale: WORKAROUND-ID`` — its checks find nothing here;
* ``# not-applicable: WORKAROUND-ID`` — the workaround does not exist at this ref (outside its ``exists_in``): it is
  not checked, and no cell of the gate matrix links it.

A workaround in ``LINKED`` is also run against the gate rules of its layer on the same files: the target's cell links
it where it is live and never where it is not applicable (in both, the cell is one a workaround can help with).

For the source-build workaround, the setting printed at the ref (its era's command) must be what the build target list
row gives as remedy on the same files (the answer's build step takes it from there): a build from source is
``AMDGPU_TARGETS=… go generate ./... && go build .`` from ollama v0.1.21 to v0.4, ``make -j 5 HIP_ARCHS_COMMON=… &&
go build .`` from v0.4.0 to v0.5.1 (make's command line replaces the Makefile's plain ``:=`` list), ``make -j 5
HIP_ARCHS=…`` from v0.5.2 to v0.5.8, CMake after — the row is override-required there. Where the release reads no
list of yours (v0.1.18 … v0.1.20) the row is blocked and both say to edit the build's own list ("add … to GPU_LIST").
Where the workaround is stale, the row offers neither.
"""

from __future__ import annotations

import pytest

from gfxgate.gate.engine import build_matrix, collect_facts
from gfxgate.gate.route import override_rule
from gfxgate.gate.ruleset import RuleSet, default_rules
from gfxgate.gate.workarounds import LIVE, STALE, default_workarounds, link
from gfxgate.trace.workarounds import check_all, not_applicable
from gfxgate.model import Status
from gfxgate.sources.directory import DirectorySource
from gfxgate.targets import catalog
from tests.gate.rule_fixtures import WORKAROUND_FIXTURES, OneSource, cases, copy_case

BUILD_ROW = {"build-amdgpu-targets": "cmake-filter"}  # workaround -> the layer whose remedy is the same command
OUTSIDER = "gfx1031"  # in no default ROCm list of ollama before v0.5.8: its build row needs your own list
LINKED = {"build-rocm-compute-major-min": ("discovery", "gfx803")}  # workaround -> (layer, target) whose cell links it


@pytest.mark.parametrize("workaround_id,case", cases(WORKAROUND_FIXTURES))
def test_workaround_checks_find_what_the_fixture_says(workaround_id, case, tmp_path):
    items = {w.id: w for w in default_workarounds()}
    assert workaround_id in items, f"tests/workarounds/{workaround_id}: no workaround has this id"
    annotations = copy_case(case, tmp_path)
    kinds = {a.kind for a in annotations}
    assert kinds in ({"live"}, {"stale"}, {"not-applicable"}), f"{case}: one of live:, stale:, not-applicable:"
    assert {a.body for a in annotations} == {workaround_id}, "annotations name the workaround of their folder"
    source = DirectorySource("ollama", tmp_path, ref=case.name)
    if workaround_id in LINKED and kinds != {"stale"}:
        _check_link(items[workaround_id], source, linked=kinds == {"live"})
    absent = not_applicable((items[workaround_id],), OneSource(source))
    if kinds == {"not-applicable"}:
        assert absent == [items[workaround_id]], f"{case.name}: {workaround_id} exists here"
        assert check_all((items[workaround_id],), OneSource(source)) == [], (
            f"{case.name}: checked where it does not exist"
        )
        return
    assert absent == [], f"{case.name}: {workaround_id} is not applicable here"
    report = check_all((items[workaround_id],), OneSource(source), targets=(catalog().parse(OUTSIDER),))[0]
    expected = LIVE if annotations[0].kind == "live" else STALE
    assert report.state == expected, f"{case.name}: {report.summary}"
    cited = {(e.location.path, e.location.line) for r in report.results for e in r.evidence}
    for a in annotations:
        if a.kind == "live" and a.evidence_line is not None:
            assert (a.path, a.evidence_line) in cited, f"{a.path}:{a.line}: evidence is {sorted(cited)}"
    layer = BUILD_ROW.get(workaround_id)
    if layer is None:
        return
    ruleset = default_rules()
    rules = RuleSet(layers=ruleset.layers, rules=tuple(r for r in ruleset.rules if r.layer == layer))
    cat = catalog()
    matrix = build_matrix(rules, collect_facts(rules, OneSource(source)), [cat.parse(OUTSIDER)], cat)
    cell = matrix.cells[(layer, OUTSIDER)]
    setting = report.workaround.setting  # filled for the target (gate.route.fill_setting): its own list, no other's
    if expected == LIVE:
        assert report.workaround.era is not None, f"{case.name}: no era of {workaround_id} holds this ref"
        assert cell.remedy == setting, (case.name, cell.remedy)
        edit = setting.startswith(f"add {OUTSIDER} to ")  # the release reads no list of yours: edit its own
        if edit:
            assert cell.status == Status.BLOCKED and "no way to give your own list" in cell.summary, (
                case.name,
                cell.summary,
            )
        else:
            assert cell.status == Status.OVERRIDE_REQUIRED, f"{case.name}: {cell.summary}"
    else:
        assert cell.status != Status.OVERRIDE_REQUIRED, f"{case.name}: {cell.summary} ({cell.remedy})"
        assert cell.remedy != setting, f"{case.name}: {cell.remedy}"


def _check_link(workaround, source, *, linked: bool) -> None:
    """The gate rules of the workaround's layer on the case's files: the target's cell is one a workaround can help
    with (blocked / override-required / partial), and it links this one exactly where the case says it is live."""
    layer, target = LINKED[workaround.id]
    ruleset = default_rules()
    rules = RuleSet(layers=ruleset.layers, rules=tuple(r for r in ruleset.rules if r.layer == layer))
    cat = catalog()
    matrix = build_matrix(
        rules, collect_facts(rules, OneSource(source)), [cat.parse(target)], cat, sources=(source.info(),)
    )
    cell = link(matrix, default_workarounds(), override_rule()).cells[(layer, target)]
    assert cell.status in (Status.BLOCKED, Status.OVERRIDE_REQUIRED, Status.PARTIAL), (source.ref, cell.summary)
    assert (workaround.id in cell.workarounds) == linked, (source.ref, cell.status, cell.workarounds)


def test_each_era_of_the_source_build_has_a_fixture():
    """Every era of the source-build workaround that ollama's fixtures can reach is exercised by a case."""
    from gfxgate.sources.versions import in_range

    build = next(w for w in default_workarounds() if w.id == "build-amdgpu-targets")
    refs = [
        case.name for workaround_id, case in (p.values for p in cases(WORKAROUND_FIXTURES)) if workaround_id == build.id
    ]
    pre_cmake = [
        era for era in build.eras if not in_range("v0.5.8", era.versions) and not in_range("v0.32.15", era.versions)
    ]
    assert pre_cmake, "the eras before CMake are gone"
    for era in pre_cmake:
        assert any(in_range(ref, era.versions) for ref in refs), f"no fixture case in {era.describe()}"
