"""What a diagnosis start takes from gfxgate's rules cache (issue 31's start-up work): the routes' cross-checks and
the embedded timeline's staleness verdict are computed once per content of the files they read; the cached answer is
the computed one, and a change to any of those files computes (and refuses) again."""

from __future__ import annotations

import shutil
import sys

import pytest

from gfxgate import datacache, resources
from gfxgate.errors import RuleError
from tests.diagnose import checks_called


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    from tests.inprocess import clear_caches

    real = resources.rules_dir
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "cache"))
    datacache.reset()
    yield
    # a module first imported while rules_dir was the copy's bound the stand-in at its top: give it the real one
    for name, module in list(sys.modules.items()):
        if name.startswith("gfxgate") and module is not None and callable(getattr(module, "rules_dir", None)):
            if module.rules_dir is not real and getattr(module.rules_dir, "__name__", "") == "<lambda>":
                module.rules_dir = real
    clear_caches()  # every loader's cache: nothing read from the edited copy of the rules outlives the test
    datacache.reset()


def _copy_rules(tmp_path, monkeypatch):
    """Every loader reads a copy of the shipped rules, cached as the shipped files are."""
    rules = tmp_path / "rules"
    shutil.copytree(resources.rules_dir(), rules)
    for module in [m for name, m in sys.modules.items() if name.startswith("gfxgate") and hasattr(m, "rules_dir")]:
        monkeypatch.setattr(module, "rules_dir", lambda: rules)
    monkeypatch.setattr(datacache, "is_shipped", lambda path: True)
    return rules


def _fresh():
    from gfxgate import targets
    from gfxgate.diagnose import remedy
    from gfxgate.gate import route, ruleset, workarounds
    from gfxgate.sources import resolve

    for f in (
        route.default_routes,
        workarounds.default_workarounds,
        ruleset.layer_ids,
        ruleset.default_rules,
        resolve.load_pins,
        targets.catalog,
        remedy._timeline,
    ):
        if hasattr(f, "cache_clear"):
            f.cache_clear()
    datacache.reset()


def test_routes_are_checked_once_per_content_and_a_changed_workaround_checks_again(own_cache, tmp_path, monkeypatch):
    from gfxgate.gate import route

    rules = _copy_rules(tmp_path, monkeypatch)
    _fresh()
    first = route.default_routes()
    _fresh()
    again, calls = checks_called(monkeypatch, route.default_routes)
    assert calls == [], "the second start checks nothing again"
    assert again == first

    # a workaround a route step names is renamed: a new key, the cross-check runs and refuses the routes
    step = (
        first.routes[0].steps[0].workaround
        if first.routes[0].steps
        else next(s.workaround for r in first.routes for s in r.steps)
    )
    path = rules / "workarounds.yaml"
    text = path.read_text(encoding="utf-8")
    assert f"id: {step}\n" in text
    path.write_text(text.replace(f"id: {step}\n", f"id: {step}-renamed\n"), encoding="utf-8")
    _fresh()
    with pytest.raises(RuleError, match=f"unknown workaround '{step}'"):
        route.default_routes()
    _fresh()


def test_the_snapshot_staleness_is_judged_once_per_content_and_a_changed_input_is_stale(
    own_cache, tmp_path, monkeypatch
):
    from gfxgate.timeline import snapshot

    rules = _copy_rules(tmp_path, monkeypatch)
    _fresh()
    judged: list[int] = []
    real = snapshot.stale_reasons
    monkeypatch.setattr(snapshot, "stale_reasons", lambda data: judged.append(1) or real(data))
    full = snapshot.load()
    cells = snapshot.load_cells()
    assert len(judged) == 1, "the second load takes the verdict from the cache"
    assert cells.tags == full.tags and cells.targets == full.targets
    for target in ("gfx900", "gfx906", "gfx1030"):
        assert cells.row(target) == full.row(target)
        assert cells.cell_at(target, full.tags[-1]) == full.cell_at(target, full.tags[-1])

    routes = rules / "routes.yaml"
    routes.write_text(routes.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    _fresh()
    with pytest.raises(RuleError, match="stale .*routes changed"):
        snapshot.load_cells()
    assert len(judged) == 2
    _fresh()


def test_gate_rules_are_checked_once_per_content_and_a_changed_rule_checks_again(own_cache, tmp_path, monkeypatch):
    """The gate rules' checks beyond the schema (paths, versions, the matchers' params: ~100 RE2 compilations) run
    on the first load of a content; a start of an unchanged install takes the verdict from the cache (the `scan -t`
    budget, benchmarks/bench_budget.py); a rule edited into a bad regex is refused again."""
    from gfxgate.gate import ruleset

    rules = _copy_rules(tmp_path, monkeypatch)
    checked: list[str] = []
    real = ruleset._check_rule
    monkeypatch.setattr(ruleset, "_check_rule", lambda rule, m: checked.append(rule.id) or real(rule, m))
    _fresh()
    first = ruleset.default_rules()
    assert len(checked) == len(first.rules) > 20
    _fresh()
    checked.clear()
    assert ruleset.default_rules() == first
    assert checked == [], "the second start checks nothing again"

    path = rules / "gates" / "cmake-presets.yaml"
    text = path.read_text(encoding="utf-8")
    assert "pattern: 'ROCm v6 build is currently broken'" in text
    path.write_text(text.replace("'ROCm v6 build is currently broken'", "'ROCm (v6'"), encoding="utf-8")
    _fresh()
    with pytest.raises(RuleError, match=r"cmake-presets\.yaml.*bad regex"):
        ruleset.default_rules()
    assert checked, "a changed rules file is checked again"
    _fresh()


def test_a_start_compiles_only_the_catalogue_patterns_it_searches(own_cache, monkeypatch):
    """The shipped catalogue's patterns were compiled and checked when the rules cache was filled; a start from the
    cache compiles a message's pattern on its first search (the `diagnose` budget), and finds what the compiled
    pattern finds."""
    from gfxgate.diagnose import catalogue, patterns

    catalogue.default_catalogue.cache_clear()
    catalogue._checked.cache_clear()
    catalogue.default_catalogue()  # fills the cache: every pattern compiled and checked
    catalogue.default_catalogue.cache_clear()
    catalogue._checked.cache_clear()
    compiled: list[str] = []
    real = patterns.compile_pattern
    monkeypatch.setattr(patterns, "compile_pattern", lambda p: compiled.append(p) or real(p))
    messages = catalogue.default_catalogue().messages
    assert compiled == [], "a start from the cache compiles no pattern up front"
    message = next(m for m in messages if m.examples)
    assert message.search(message.examples[0]) is not None
    assert message.regex.search(message.examples[0]).group(0) == real(message.pattern).search(
        message.examples[0]
    ).group(0)
    assert compiled == [message.pattern], "the search compiled its own pattern, once"
    catalogue.default_catalogue.cache_clear()
    catalogue._checked.cache_clear()
