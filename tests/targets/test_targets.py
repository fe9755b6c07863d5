import subprocess

import pytest

from gfxgate.errors import TargetError
from gfxgate.targets import TargetId, catalog


@pytest.fixture(scope="module")
def cat():
    return catalog()


def test_parse_canonical_ids(cat):
    assert str(cat.parse("gfx90a:xnack-:sramecc+")) == "gfx90a:sramecc+:xnack-"
    assert cat.parse("gfx906:xnack-") == TargetId("gfx906", (("xnack", "-"),))
    assert str(cat.parse("GFX1030")) == "gfx1030"


def test_product_names_resolve(cat):
    assert cat.parse("RX Vega 56").processor == "gfx900"
    assert cat.parse("Radeon VII").processor == "gfx906"


@pytest.mark.parametrize(
    "bad", ["gfx9000", "gfx906:xnack", "gfx906:foo+", "gfx1030:xnack-", "", "gfx906:xnack-:xnack+"]
)
def test_bad_targets_are_clear_errors(cat, bad):
    with pytest.raises(TargetError):
        cat.parse(bad)


def test_unknown_target_suggests_close_names(cat):
    with pytest.raises(TargetError) as info:
        cat.parse("gfx9001")
    assert "gfx900" in str(info.value)


def test_family_and_products(cat):
    vega = cat.processor("gfx900")
    assert vega.family == "GCN5"
    assert "Radeon RX Vega 56" in vega.products and "Instinct MI25" in vega.products
    assert cat.processor("gfx803").family == "GCN4"
    assert cat.processor("gfx90a").family == "CDNA2"


@pytest.mark.parametrize(
    "name,value",
    [("gfx900", "9.0.0"), ("gfx906", "9.0.6"), ("gfx90a", "9.0.10"), ("gfx1030", "10.3.0"), ("gfx1100", "11.0.0")],
)
def test_hsa_override_both_ways(cat, name, value):
    assert cat.processor(name).hsa_override == value
    assert cat.from_hsa_override(value).name == name


def test_hsa_override_errors(cat):
    for bad in ("9.0", "9.0.99", "42.0.0"):
        with pytest.raises(TargetError):
            cat.from_hsa_override(bad)


def test_generic_membership(cat):
    assert [g.name for g in cat.generics_of("gfx900")] == ["gfx9-generic"]
    assert [g.name for g in cat.generics_of("gfx1031")] == ["gfx10-3-generic"]
    assert cat.generics_of("gfx908") == []


def test_compatibility_rules(cat):
    comp = cat.compatibility
    p = cat.parse
    assert comp(p("gfx900"), p("gfx900")).kind == "exact"
    assert comp(p("gfx900"), p("gfx900:xnack-")).kind == "any-feature"
    assert comp(p("gfx906:xnack-"), p("gfx906:xnack-")).kind == "exact"
    assert comp(p("gfx906:xnack-"), p("gfx906:xnack+")).kind == "none"
    assert comp(p("gfx906:xnack-"), p("gfx906")).kind == "conditional"
    assert comp(p("gfx9-generic"), p("gfx906")).kind == "generic"
    assert comp(p("gfx10-3-generic"), p("gfx900")).kind == "none"
    assert comp(p("gfx1030"), p("gfx1031")).kind == "none"


def test_spellings_cover_feature_variants(cat):
    spellings = cat.spellings(cat.parse("gfx90a"))
    assert spellings[0] == "gfx90a"
    assert {"gfx90a:xnack-", "gfx90a:xnack+", "gfx90a:sramecc+:xnack-"} <= set(spellings)
    assert cat.spellings(cat.parse("gfx1030")) == ["gfx1030"]


@pytest.mark.parametrize(
    "target", ["gfx803", "gfx900", "gfx906:xnack-", "gfx90a:sramecc+:xnack-", "gfx1030", "gfx1100", "gfx9-generic"]
)
def test_predefined_macros_match_clang(cat, target, clang19):
    out = subprocess.run(
        [
            clang19,
            "-x",
            "hip",
            f"--offload-arch={target}",
            "-nogpulib",
            "-nogpuinc",
            "--cuda-device-only",
            "-dM",
            "-E",
            "-",
        ],
        input="",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    defined = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] == "#define":
            defined[parts[1]] = parts[2]
    ours = cat.predefined_macros(cat.parse(target))
    for name, value in ours.items():
        assert defined.get(name) == value, name
    clang_device = {k for k in defined if k.startswith(("__gfx", "__GFX", "__amdgcn_feature"))}
    assert clang_device <= set(ours)
