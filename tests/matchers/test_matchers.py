"""Each matcher on small real files (a plain folder source): the constructs upstream uses, and the edges."""

from __future__ import annotations

import json

import pytest

from gfxgate.matchers import MATCHERS, NoMatch
from gfxgate.model import Status
from gfxgate.gate.ruleset import GateRule
from gfxgate.sources.directory import DirectorySource
from gfxgate.targets import catalog
from tests.gate.rule_fixtures import FIXTURES, read_case


def rule(matcher: str, **params) -> GateRule:
    return GateRule(
        id="t",
        layer="x",
        title="test rule",
        repo="r",
        paths=("f",),
        matcher=matcher,
        params=params,
        summary="found in {function}",
        remedy="fix {target}",
    )


def fixture_text(case: str, path: str, tmp_path) -> str:
    """A file of a rule fixture (tests/rules/RULE/CASE/PATH) as the rule reads it: annotation lines blanked."""
    tree = tmp_path / "fixture"
    read_case(FIXTURES / case, tree)
    return (tree / path).read_text(encoding="utf-8")


def run(tmp_path, matcher: str, files: dict[str, str], targets: list[str], **params):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    source = DirectorySource("r", tmp_path)
    r = rule(matcher, **params)
    MATCHERS[matcher].check_params(r)
    facts = MATCHERS[matcher].extract(r, source, list(files))
    json.dumps(facts)  # facts must be JSON: the snapshot stores them
    cat = catalog()
    return {t: MATCHERS[matcher].evaluate(r, facts, cat.parse_target(t), cat) for t in targets}


def test_cmake_filter_features_guards_and_variables(tmp_path):
    text = """set(ONLY "^gfx906:xnack-$" CACHE STRING "doc")
if(NOT AMDGPU_TARGETS)
  list(FILTER AMDGPU_TARGETS INCLUDE REGEX ${ONLY})  # trailing comment
endif()
if(WIN32)
  list(FILTER AMDGPU_TARGETS EXCLUDE REGEX "^gfx906")
endif()
"""
    out = run(
        tmp_path,
        "cmake-list-filter",
        {"CMakeLists.txt": text},
        ["gfx906", "gfx906:xnack-", "gfx906:xnack+", "gfx1030"],
        variable="AMDGPU_TARGETS",
        platform="linux",
    )
    assert out["gfx906"].status is Status.PARTIAL and "gfx906:xnack-" in out["gfx906"].summary
    assert out["gfx906:xnack-"].status is Status.ALLOWED
    assert out["gfx906:xnack+"].status is Status.OVERRIDE_REQUIRED
    assert out["gfx906:xnack+"].remedy == "fix gfx906:xnack+"
    assert out["gfx1030"].status is Status.OVERRIDE_REQUIRED
    assert any("Windows only" in h.note for h in out["gfx1030"].hits)
    assert out["gfx1030"].hits[0].line == 3


def test_cmake_unconditional_exclude_blocks(tmp_path):
    out = run(
        tmp_path,
        "cmake-list-filter",
        {"CMakeLists.txt": 'list(FILTER AMDGPU_TARGETS EXCLUDE REGEX "^gfx90[06]")\n'},
        ["gfx900", "gfx1030"],
        variable="AMDGPU_TARGETS",
    )
    assert out["gfx900"].status is Status.BLOCKED and out["gfx1030"].status is Status.ALLOWED


def test_cmake_without_filter_is_no_match(tmp_path):
    with pytest.raises(NoMatch):
        run(tmp_path, "cmake-list-filter", {"CMakeLists.txt": "project(x)\n"}, ["gfx900"], variable="AMDGPU_TARGETS")


def test_preprocessor_three_valued(tmp_path):
    header = """#ifndef __gfx900__
#define NOT_VEGA
#endif
#if HIP_VERSION >= 60500000
#define NEW_HIP
#endif
#if defined(__gfx900__) && !defined(NEW_HIP)
#define OLD_PATH
#elif (defined(__gfx1030__) || defined(__gfx1031__)) && 1
#define RDNA2
#endif
"""
    code = """int f(int a) {
#if defined(OLD_PATH)
  return a;   // scalar path
#elif defined(RDNA2)
  return __builtin_amdgcn_sdot4(a, a, 0, false);
#else
  return 0;
#endif
}
"""
    files = {"hip.h": header, "common.cuh": code}
    derived = run(
        tmp_path,
        "c-preprocessor",
        files,
        ["gfx900", "gfx1030", "gfx803"],
        report="derived-macros",
        macros=["RDNA2", "OLD_PATH", "NOT_VEGA"],
    )
    assert derived["gfx1030"].status is Status.ALLOWED and "RDNA2" in derived["gfx1030"].summary
    # gfx900's branch depends on HIP_VERSION, which no scanned file defines: unknown, not a guess
    assert derived["gfx900"].status is Status.UNKNOWN and "HIP_VERSION" in derived["gfx900"].summary
    assert "NOT_VEGA" in derived["gfx803"].summary
    branch = run(
        tmp_path,
        "c-preprocessor",
        files,
        ["gfx1030", "gfx803"],
        report="active-branch",
        anchor=r"int f\(",
        describe={"hardware sdot4": r"__builtin_amdgcn_sdot4"},
    )
    assert branch["gfx1030"].status is Status.ALLOWED and "hardware sdot4" in branch["gfx1030"].summary
    assert branch["gfx803"].status is Status.PARTIAL and "#else" in branch["gfx803"].summary


def test_go_source_kinds(tmp_path):
    go = """package discover

func Probe(env map[string]string) {
	env["GGML_CUDA_INIT"] = "1"
	x := GetSupportedGFX("lib")
	_ = x
}

func GetSupportedGFX(dir string) []string { return nil }
"""
    files = {"amd.go": go}
    for find, pattern, line in (
        ("function", "^GetSupportedGFX$", 9),
        ("call", "GetSupportedGFX", 5),
        ("string", "^GGML_CUDA_INIT$", 4),
        ("assignment", "^x$", 5),
    ):
        out = run(tmp_path, "go-source", files, ["gfx900"], find=find, pattern=pattern)
        assert out["gfx900"].hits[0].line == line, find
    out = run(tmp_path, "go-source", files, ["gfx900"], find="string", pattern="^GGML_CUDA_INIT$")
    assert out["gfx900"].summary == "found in Probe"


def test_json_presets_inheritance_and_hidden(tmp_path):
    presets = {
        "configurePresets": [
            {"name": "base", "hidden": True, "cacheVariables": {"AMDGPU_TARGETS": "gfx900"}},
            {"name": "rocm", "inherits": "base"},
            {
                "name": "rocm-new",
                "cacheVariables": {"AMDGPU_TARGETS": {"type": "STRING", "value": "gfx1030;gfx906:xnack-"}},
            },
        ]
    }
    out = run(
        tmp_path,
        "json-target-list",
        {"CMakePresets.json": json.dumps(presets, indent=2)},
        ["gfx900", "gfx906", "gfx1100"],
        variable="AMDGPU_TARGETS",
        presets="rocm",
    )
    assert out["gfx900"].status is Status.ALLOWED and "rocm" in out["gfx900"].summary
    assert out["gfx900"].hits[0].line == 7  # the line in the parent preset that sets the list
    assert out["gfx906"].status is Status.PARTIAL
    assert out["gfx1100"].status is Status.BLOCKED


def test_json_presets_without_a_string_name_are_no_presets(tmp_path):
    """CMake requires a preset's name; one without (or with a number) was looked up as None and crashed the regex of
    exclude_presets (TypeError: object of type 'NoneType' has no len())."""
    presets = {
        "configurePresets": [
            {"cacheVariables": {"V": "gfx900"}},
            {"name": 7, "cacheVariables": {"V": "gfx900"}},
            {"name": "rocm", "cacheVariables": {"V": "gfx906"}},
        ]
    }
    out = run(
        tmp_path,
        "json-target-list",
        {"CMakePresets.json": json.dumps(presets, indent=2)},
        ["gfx900", "gfx906"],
        variable="V",
        exclude_presets="^x",
    )
    assert out["gfx900"].status is Status.BLOCKED and out["gfx906"].status is Status.ALLOWED


def test_glob_removal_matches_feature_spellings(tmp_path):
    out = run(
        tmp_path,
        "glob-removal",
        {"Dockerfile": "RUN rm -f lib/rocblas/library/*gfx90a-xnack-* && echo done\n"},
        ["gfx90a", "gfx908"],
        artifacts=["Kernels.so-000-{target}.hsaco"],
    )
    assert out["gfx90a"].status is Status.BLOCKED and "gfx90a-xnack-" in out["gfx90a"].summary
    assert out["gfx908"].status is Status.ALLOWED


def test_docs_matrix_footnotes_and_columns(tmp_path):
    rst = """.. csv-table::
      :header: "ROCm Version", "6.3.3", "6.2.0"

      :doc:`GPU / LLVM target <x>`,gfx1100,gfx1100
      ,gfx942 [#mi300]_,gfx90a
      ,,
"""
    out = run(tmp_path, "docs-matrix", {"m.rst": rst}, ["gfx942", "gfx90a"], row="GPU / LLVM target")
    assert out["gfx942"].status is Status.ALLOWED  # footnote markers are not part of the target
    assert out["gfx90a"].status is Status.BLOCKED  # listed only in the older column


def test_pattern_status_first_check_wins_and_no_match_without_absent(tmp_path):
    checks = [
        {"pattern": r"EnableVulkan\(true\)", "status": "allowed", "summary": "default at {path}"},
        {
            "pattern": r"OLLAMA_VULKAN=1",
            "status": "override-required",
            "summary": "opt-in",
            "remedy": "OLLAMA_VULKAN=1",
        },
    ]
    both = "x := EnableVulkan(true)\n// set OLLAMA_VULKAN=1\n"
    got = run(tmp_path, "pattern-status", {"runner.go": both}, ["gfx900"], checks=checks)["gfx900"]
    assert got.status == Status.ALLOWED and got.summary == "default at runner.go" and got.hits[0].line == 1
    got = run(tmp_path, "pattern-status", {"runner.go": "// set OLLAMA_VULKAN=1\n"}, ["gfx900"], checks=checks)[
        "gfx900"
    ]
    assert got.status == Status.OVERRIDE_REQUIRED and got.remedy == "OLLAMA_VULKAN=1"
    with pytest.raises(NoMatch):
        run(tmp_path, "pattern-status", {"runner.go": "package discover\n"}, ["gfx900"], checks=checks)


def test_integrated_gpu_filter_without_the_default_list_and_without_the_function(tmp_path):
    """The shipped rule on ollama's own runner.go is tests/rules/ollama-discovery-integrated-gpus; here the edges."""
    go = fixture_text("ollama-discovery-integrated-gpus/v0.32.15", "discover/runner.go", tmp_path)
    without = run(
        tmp_path / "a",
        "integrated-gpu-filter",
        {"runner.go": go},
        ["gfx1151", "gfx900"],
        function="^filterIntegratedGPUs$",
        message="OLLAMA_IGPU_ENABLE=1",
    )
    assert without["gfx1151"].status == Status.OVERRIDE_REQUIRED  # the list keeps ROCm devices only
    assert without["gfx900"].status == Status.ALLOWED and without["gfx900"].summary.startswith("discrete GPU")
    with pytest.raises(NoMatch):
        run(
            tmp_path / "b",
            "integrated-gpu-filter",
            {"runner.go": "package discover\n"},
            ["gfx900"],
            function="^filterIntegratedGPUs$",
            message="OLLAMA_IGPU_ENABLE=1",
        )


def test_matchers_are_found_by_module_name_and_behave_as_a_mapping():
    """One plugin convention: matcher `foo-bar` is gfxgate/matchers/foo_bar.py; get/items work before any use."""
    from gfxgate.plugins import Plugins

    fresh = Plugins("gfxgate.matchers", "MATCHER")
    assert fresh.get("cmake-list-filter") is MATCHERS["cmake-list-filter"]
    assert fresh.get("no-such-matcher") is None and "no-such-matcher" not in fresh
    assert {name: m.name for name, m in fresh.items()} == {name: name for name in fresh}
    assert len(fresh) == len(MATCHERS) >= 11


def test_the_gates_schema_takes_every_matcher_from_its_module():
    """Matcher names and params schemas are facts of the matcher modules, not of gates.schema.json."""
    import json

    from gfxgate.datafiles import load_schema
    from gfxgate.resources import schemas_dir

    shell = json.loads((schemas_dir() / "gates.schema.json").read_text(encoding="utf-8"))
    assert "allOf" not in shell["$defs"]["rule"] and "enum" not in shell["$defs"]["rule"]["properties"]["matcher"]
    rule = load_schema("gates")["$defs"]["rule"]
    assert rule["properties"]["matcher"]["enum"] == list(MATCHERS)
    assert [branch["if"]["properties"]["matcher"]["const"] for branch in rule["allOf"]] == list(MATCHERS)
    assert all(
        branch["then"]["properties"]["params"] is MATCHERS[branch["if"]["properties"]["matcher"]["const"]].params_schema
        for branch in rule["allOf"]
    )


def test_build_target_list_shell_array_make_variables_override_and_absent(tmp_path):
    script = """amdGPUs() {
    if [ -n "${AMDGPU_TARGETS}" ]; then
        echo "${AMDGPU_TARGETS}"
        return
    fi
    GPU_LIST=(
        "gfx900"
        "gfx906:xnack-"
        # "gfx1030"
    )
}
"""
    lists = [{"start": r"^\s*GPU_LIST=\(", "end": r"^\s*\)"}, {"start": r"^HIP_ARCHS_(COMMON|LINUX)\s*:?="}]
    override = r'if \[ -n "\$\{?AMDGPU_TARGETS\}?" \]'
    out = run(
        tmp_path,
        "build-target-list",
        {"gen_linux.sh": script},
        ["gfx900", "gfx906", "gfx1030"],
        lists=lists,
        what="the list",
        override=override,
    )
    assert out["gfx900"].status is Status.ALLOWED and out["gfx900"].hits[0].line == 7
    # xnack-off devices only by default; a user list can name the others
    assert out["gfx906"].status is Status.OVERRIDE_REQUIRED and "gfx906:xnack-" in out["gfx906"].summary
    # a commented-out entry is not in the list; the script takes $AMDGPU_TARGETS: override-required, with both lines
    assert out["gfx1030"].status is Status.OVERRIDE_REQUIRED and out["gfx1030"].remedy == "fix gfx1030"
    assert [h.line for h in out["gfx1030"].hits] == [7, 2]  # the list (its first entry) and the override
    make = "HIP_ARCHS_COMMON := gfx900 gfx1030\nHIP_ARCHS_LINUX := gfx90a:xnack+ gfx90a:xnack-\nX := gfx1100\n"
    out = run(
        tmp_path,
        "build-target-list",
        {"Makefile.rocm": make},
        ["gfx90a", "gfx1100", "gfx1030"],
        lists=lists,
        what="the list",
        override=r"^\s*HIP_ARCHS\s*\?=",
    )
    assert out["gfx90a"].status is Status.ALLOWED and out["gfx1030"].status is Status.ALLOWED
    assert out["gfx1100"].status is Status.BLOCKED  # not listed (line 3 is no list) and no HIP_ARCHS?= to give one
    out = run(tmp_path, "build-target-list", {"gen_linux.sh": script}, ["gfx906"], lists=lists, what="the list")
    assert out["gfx906"].status is Status.PARTIAL  # without a user list, the xnack-off devices only
    # another build system in the tree: no list here says nothing (the CMake rules decide), never "no ROCm build"
    r = GateRule(
        id="t",
        layer="x",
        title="t",
        repo="r",
        paths=("gen_linux.sh", "CMakeLists.txt"),
        matcher="build-target-list",
        params={"lists": lists, "what": "the list", "defer_to": ["CMakeLists.txt"]},
        absent={"status": "blocked", "summary": "no ROCm build"},
    )
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    with pytest.raises(NoMatch, match="CMakeLists.txt builds"):
        MATCHERS["build-target-list"].extract(r, DirectorySource("r", tmp_path), ["CMakeLists.txt"])
    (tmp_path / "gen_linux.sh").write_text("echo cuda only\n")  # without CMake: a script with no list is no ROCm build
    assert MATCHERS["build-target-list"].extract(r, DirectorySource("r", tmp_path), ["gen_linux.sh"]) == {
        "absent": ["gen_linux.sh"]
    }
    with pytest.raises(NoMatch):  # no list and no `absent`: the rule does not match
        run(
            tmp_path,
            "build-target-list",
            {"gen_linux.sh": "echo cuda only\n"},
            ["gfx900"],
            lists=lists,
            what="the list",
        )


def test_gfx_major_minimum_rejects_older_generations_with_the_minimum_line(tmp_path):
    go = 'package discover\n\n// RocmComputeMajorMin = "1" in a comment is not it\nvar RocmComputeMajorMin = "9"\n'
    below = {
        "status": "override-required",
        "summary": "gfx{major} below {minimum}",
        "remedy": "RocmComputeMajorMin={major}",
    }
    minimum = [r"if v\.Major < (?P<major>[0-9]+)", r'^var RocmComputeMajorMin\s*=\s*"(?P<major>[0-9]+)"']
    out = run(
        tmp_path,
        "gfx-major-minimum",
        {"gpu.go": go},
        ["gfx803", "gfx900", "gfx90a", "gfx1030", "gfx1151"],
        minimum=minimum,
        below=below,
    )
    assert out["gfx803"].status is Status.OVERRIDE_REQUIRED and out["gfx803"].summary == "gfx8 below 9"
    assert out["gfx803"].remedy == "RocmComputeMajorMin=8" and out["gfx803"].hits[0].line == 4
    assert all(out[t].status is Status.ALLOWED for t in ("gfx900", "gfx90a", "gfx1030", "gfx1151"))
    out = run(
        tmp_path, "gfx-major-minimum", {"gpu.go": "if v.Major < 10 {\n"}, ["gfx900"], minimum=minimum, below=below
    )
    assert out["gfx900"].status is Status.OVERRIDE_REQUIRED  # the first pattern that matches gives the minimum
    with pytest.raises(NoMatch):
        run(tmp_path, "gfx-major-minimum", {"gpu.go": "package gpu\n"}, ["gfx900"], minimum=minimum, below=below)
    from gfxgate.errors import RuleError

    with pytest.raises(RuleError, match="major"):
        run(tmp_path, "gfx-major-minimum", {"gpu.go": go}, ["gfx900"], minimum=[r"Min = (\d+)"], below=below)


def test_regex_params_declared_once_give_schema_check_and_defaults():
    from gfxgate.errors import RuleError

    table = MATCHERS["markdown-table"]
    properties = table.params_schema["properties"]
    assert [k for k, v in properties.items() if v == {"type": "string"}] == list(table.regexes.defaults)
    assert properties["listed_means_supported"] == {"type": "boolean"}  # the one param that is not a regex
    rx = table.regexes.compile(rule("markdown-table", column="LLVM", supported="yes"))
    assert (rx["column"].pattern, rx["supported"].pattern, rx["unsupported"].pattern) == ("LLVM", "yes", "❌")
    presets = MATCHERS["json-target-list"].regexes.compile(rule("json-target-list", variable="V"))
    assert presets["presets"].search("any") and presets["exclude_presets"] is None
    with pytest.raises(RuleError, match=r"rule t: params\.unsupported: "):
        table.check_params(rule("markdown-table", column="x", unsupported="(a"))


def test_vulkan_architecture_counts_lines_that_use_each_class(tmp_path):
    """The classes the classifier returns, counted per line outside it: a line naming a class twice counts once, a
    comment does not count, a longer name sharing a prefix (AMD_RDNA1 vs AMD_RDNA1X) is another word."""
    cpp = """static vk_device_architecture get_device_architecture(const vk::PhysicalDevice& device) {
    if (wave64_only) {
        return vk_device_architecture::AMD_GCN;
    } else if (waves == 20) {
        return vk_device_architecture::AMD_RDNA1;
    }
    return vk_device_architecture::OTHER;
}
if (arch == AMD_GCN || arch2 == AMD_GCN) { x(); }
// AMD_GCN in a comment only
y = AMD_RDNA1X; z = "AMD_GCN";  // AMD_RDNA1
w = AMD_RDNA1; v = AMD_GCN; // AMD_GCN
"""
    out = run(
        tmp_path,
        "vulkan-architecture",
        {"f": cpp},
        ["gfx900", "gfx1010"],
        function="get_device_architecture",
        enum="vk_device_architecture",
        families={"GCN5": "AMD_GCN", "RDNA1": "AMD_RDNA1"},
    )
    assert "3 line(s) outside the classifier use AMD_GCN" in out["gfx900"].summary  # lines 9, 11 (a string), 12
    assert "1 line(s) outside the classifier use AMD_RDNA1" in out["gfx1010"].summary  # line 12 only
    assert [h.line for h in out["gfx900"].hits] == [2, 3, 9, 11]


PRESETS = {
    "version": 3,
    "configurePresets": [
        {"name": "base", "hidden": True, "cacheVariables": {"OLLAMA_RUNNER_DIR": "cuda_v12"}},
        {
            "name": "cuda_linux",
            "inherits": ["base"],
            "cacheVariables": {"CMAKE_CUDA_ARCHITECTURES": "50-virtual;61;86;90a"},
        },
        {"name": "cuda_windows", "inherits": "base", "cacheVariables": {"CMAKE_CUDA_ARCHITECTURES": "61-virtual;86"}},
        {"name": "CUDA 13", "cacheVariables": {"CMAKE_CUDA_ARCHITECTURES": "75-virtual;bogus"}},
        {"name": "JetPack 6", "cacheVariables": {"CMAKE_CUDA_ARCHITECTURES": "87"}},
        {"name": "user_arch", "inherits": ["base"]},  # no list: not a runner's build
        {"name": 7, "cacheVariables": {"CMAKE_CUDA_ARCHITECTURES": "61"}},  # no string name: no preset
    ],
}


def test_cuda_arch_list_cubin_ptx_compatibility_and_jetson(tmp_path):
    files = {"p.json": json.dumps(PRESETS, indent=2)}
    got = run(
        tmp_path,
        "cuda-arch-list",
        files,
        ["sm_61", "sm_50", "sm_52", "sm_89", "sm_90", "sm_35", "sm_87", "sm_53"],
        mode="build",
    )
    assert got["sm_61"].status is Status.ALLOWED and "cuda_v12 (windows): PTX only (61-virtual)" in got["sm_61"].summary
    assert "cuda_v13 (any): absent" in got["sm_61"].summary  # "CUDA 13" names its runner folder; "bogus" is skipped
    assert got["sm_50"].status is Status.PARTIAL and "PTX only" in got["sm_50"].summary
    assert got["sm_52"].status is Status.PARTIAL and "compute_50 PTX" in got["sm_52"].summary  # runs, is not listed
    assert got["sm_89"].status is Status.PARTIAL and "sm_86 cubin" in got["sm_89"].summary  # binary compatible
    assert got["sm_90"].status is Status.PARTIAL  # 90a is arch-specific code: not sm_90's cubin
    assert got["sm_35"].status is Status.BLOCKED
    assert got["sm_87"].status is Status.ALLOWED and "cuda_jetpack6" in got["sm_87"].summary  # Jetson: JetPack runners
    assert got["sm_53"].status is Status.BLOCKED and "cuda_v12" not in got["sm_53"].summary


def test_cuda_arch_list_discovery_is_an_exact_match_and_packaging_reads_the_recipe(tmp_path):
    files = {
        "p.json": json.dumps(PRESETS, indent=2),
        "llama_server.go": 'slog.Info("skipping CUDA device — compute capability not in compiled architectures")\n',
        "Dockerfile": "RUN cmake --preset cuda_linux \\\n",
    }
    got = run(
        tmp_path,
        "cuda-arch-list",
        files,
        ["sm_50", "sm_52", "sm_61"],
        mode="discovery",
        reject="not in compiled architectures",
    )
    assert got["sm_50"].status is Status.ALLOWED and got["sm_61"].status is Status.ALLOWED  # 50-virtual lists 500
    assert got["sm_52"].status is Status.BLOCKED and "but the match is exact" in got["sm_52"].summary
    assert got["sm_52"].hits[0].path == "llama_server.go"
    shipped = run(
        tmp_path, "cuda-arch-list", files, ["sm_61"], mode="packaging", built_by=r"--preset\s+(?P<preset>\S+)"
    )
    assert shipped["sm_61"].status is Status.ALLOWED and "windows" not in shipped["sm_61"].summary
    assert any(h.path == "Dockerfile" for h in shipped["sm_61"].hits)
    # built but its COPY commented out (CUDA 11 from v0.11): not shipped; copied (cuda-12 is cuda_v12): shipped
    files["Dockerfile"] = "RUN cmake --preset cuda_linux \\\n# COPY --from=cuda-12 dist/lib/ollama /lib/ollama/\n"
    shipped_re = r"^COPY --from=(?:llama-server-)?(?P<runner>cuda[-_]v?[0-9]+|jetpack-[0-9]+)\b"
    assert (
        run(
            tmp_path,
            "cuda-arch-list",
            files,
            ["sm_61"],
            mode="packaging",
            built_by=r"--preset\s+(?P<preset>\S+)",
            shipped=shipped_re,
        )["sm_61"].status
        is Status.BLOCKED
    )
    files["Dockerfile"] += "COPY --from=cuda-12 dist/lib/ollama /lib/ollama/\n"
    assert (
        run(
            tmp_path,
            "cuda-arch-list",
            files,
            ["sm_61"],
            mode="packaging",
            built_by=r"--preset\s+(?P<preset>\S+)",
            shipped=shipped_re,
        )["sm_61"].status
        is Status.ALLOWED
    )
    with pytest.raises(NoMatch, match="discovery check"):
        run(tmp_path, "cuda-arch-list", {"p.json": json.dumps(PRESETS)}, ["sm_61"], mode="discovery", reject="nowhere")
    with pytest.raises(NoMatch, match="sets CMAKE_CUDA_ARCHITECTURES"):
        run(tmp_path, "cuda-arch-list", {"q.json": '{"configurePresets": []}'}, ["sm_61"], mode="build")


def test_cc_compare_bounds_values_tables_and_families(tmp_path):
    files = {
        "c.go": "min = 570\nif dev.ComputeMajor < 7 {\n(gpu.ComputeMajor == 7 && gpu.ComputeMinor == 2)\n",
        "d.md": "| 6.1 | x |\n| 7.5 | y |\n",
    }
    checks = [
        {
            "pattern": r"ComputeMajor == (?P<major>[0-9]) && gpu\.ComputeMinor == (?P<minor>[0-9])",
            "when": "equal",
            "status": "partial",
            "summary": "off on {bound}",
        },
        {
            "pattern": r"ComputeMajor < (?P<major>[0-9]+)",
            "when": "below",
            "status": "partial",
            "summary": "needs {min} below {bound} (cc {cc})",
        },
        {
            "pattern": r"^\| (?P<major>[0-9]+)\.(?P<minor>[0-9]) \|",
            "all": True,
            "when": "unlisted",
            "status": "blocked",
            "summary": "not a row ({bound})",
        },
        {"families": ["Kepler"], "cite": "a notice", "status": "blocked", "summary": "last branch"},
    ]
    got = run(
        tmp_path,
        "cc-compare",
        files,
        ["sm_61", "sm_72", "sm_75", "sm_80", "sm_35"],
        values={"min": r"min = (?P<v>[0-9]+)"},
        checks=checks,
        otherwise={"status": "allowed", "summary": "fine at {cc}"},
    )
    assert (got["sm_61"].status, got["sm_61"].summary) == (Status.PARTIAL, "needs 570 below 7.0 (cc 6.1)")
    assert got["sm_72"].summary == "off on 7.2"
    assert (got["sm_75"].status, got["sm_75"].summary) == (Status.ALLOWED, "fine at 7.5")
    assert got["sm_75"].hits[2].line == 2 and got["sm_75"].hits[2].path == "d.md"  # the target's own table row
    assert (got["sm_80"].status, got["sm_80"].summary) == (Status.BLOCKED, "not a row (6.1, 7.5)")
    assert got["sm_35"].summary.startswith("needs 570")  # the first check that holds decides
    with pytest.raises(NoMatch, match="value min"):
        run(
            tmp_path,
            "cc-compare",
            {"e.go": "nothing\n"},
            ["sm_61"],
            values={"min": r"min = (?P<v>[0-9]+)"},
            checks=checks[:1],
            otherwise={"status": "allowed", "summary": "x"},
        )
    from gfxgate.errors import RuleError

    with pytest.raises(RuleError, match="either pattern"):
        run(
            tmp_path,
            "cc-compare",
            files,
            ["sm_61"],
            checks=[{"status": "allowed", "summary": "x"}],
            otherwise={"status": "allowed", "summary": "x"},
        )


def test_nvidia_remedies_fill_the_architecture_number(tmp_path):
    files = {"p.json": json.dumps(PRESETS, indent=2)}
    got = run(tmp_path, "cuda-arch-list", files, ["sm_35"], mode="build")
    assert got["sm_35"].remedy == "fix sm_35"  # rule() of this module: remedy "fix {target}"
    from gfxgate.matchers import MATCHERS as M

    r = rule("cuda-arch-list", mode="build")
    r = r.__class__(**{**r.__dict__, "remedy": "-DCMAKE_CUDA_ARCHITECTURES={number}"})
    facts = M["cuda-arch-list"].extract(
        r, __import__("gfxgate.sources.directory", fromlist=["x"]).DirectorySource("r", tmp_path), ["p.json"]
    )
    finding = M["cuda-arch-list"].evaluate(r, facts, catalog().parse_target("sm_35"), catalog())
    assert finding.remedy == "-DCMAKE_CUDA_ARCHITECTURES=35"


def test_cmake_target_excludes_blocks_a_needed_project_and_an_undeclared_target(tmp_path):
    text = (
        'add_target(gfx900 "Vega (10)" FAMILY a\n  EXCLUDE_TARGET_PROJECTS\n    hipBLASLt # issue (1062)\n'
        '    rocBLAS\n  FAMILY b\n)\nadd_target(gfx1030 "RDNA2" FAMILY c)\n'
        'add_target(gfx906 "MI50"\n  EXCLUDE_TARGET_PROJECTS hipBLASLt\n  FAMILY d rocBLAS\n)\n'
    )
    found = run(
        tmp_path,
        "cmake-target-excludes",
        {"f": text},
        ["gfx900", "gfx1030", "gfx906", "gfx803"],
        function="add_target",
        needed=["rocBLAS"],
    )
    assert (found["gfx900"].status, found["gfx900"].summary) == (Status.BLOCKED, "excludes rocBLAS for gfx900")
    assert found["gfx900"].hits[0].line == 1 and "hipBLASLt, rocBLAS" in found["gfx900"].hits[0].note
    assert (found["gfx1030"].status, found["gfx1030"].summary) == (Status.ALLOWED, "builds rocBLAS for gfx1030")
    # the list ends at the next keyword: rocBLAS after FAMILY is a family name, not an exclusion
    assert found["gfx906"].status == Status.ALLOWED and found["gfx906"].summary.endswith("excludes hipBLASLt")
    assert found["gfx803"].status == Status.BLOCKED and "not declared" in found["gfx803"].summary


def test_cmake_target_excludes_refuses_what_is_not_a_declaration(tmp_path):
    with pytest.raises(NoMatch, match="no add_target"):
        run(tmp_path, "cmake-target-excludes", {"f": "other(gfx900)\n"}, [], function="add_target", needed=["rocBLAS"])
    with pytest.raises(NoMatch, match="not closed"):
        run(
            tmp_path,
            "cmake-target-excludes",
            {"f": "add_target(gfx900\n" + "  x\n" * 300},
            [],
            function="add_target",
            needed=["rocBLAS"],
        )


def test_markdown_table_unmarked_rows_and_bold_targets(tmp_path):
    text = (
        "| Arch | LLVM target | Build Passing | Sanity Tested |\n| -- | -- | -- | -- |\n"
        "| **RDNA4** | **gfx1201** | ✅ | ✅ |\n| GCN5.0 | gfx900 | ✅ | |\n"
    )
    found = run(
        tmp_path,
        "markdown-table",
        {"f": text},
        ["gfx1201", "gfx900", "gfx803"],
        column="LLVM target",
        support_column="^Sanity Tested$",
        unmarked={"status": "partial", "summary": "{processor} untested"},
    )
    assert found["gfx1201"].status == Status.ALLOWED  # **gfx1201** is gfx1201
    assert (found["gfx900"].status, found["gfx900"].summary, found["gfx900"].hits[0].line) == (
        Status.PARTIAL,
        "gfx900 untested",
        4,
    )
    assert found["gfx803"].status == Status.BLOCKED
    plain = run(
        tmp_path, "markdown-table", {"f": text}, ["gfx900"], column="LLVM target", support_column="^Sanity Tested$"
    )
    assert plain["gfx900"].status == Status.UNKNOWN  # without `unmarked`, as before
