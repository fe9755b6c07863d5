"""Hostile rule files (issue 13): YAML bombs and catastrophic regexes end in one RuleError line (exit 3), fast.

A pull request that edits rules reaches these through `gfxgate check`, so they must cost little whatever
the file says. The CLI cases run the installed console script; regex cases run real matchers and sources.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from gfxgate.errors import RuleError
from gfxgate.saferegex import RuleRegexError, rule_regex
from gfxgate.sources.directory import DirectorySource
from gfxgate.sources.gitrepo import GitRepo, GitSource
from tests.cputime import cpu_time
from tests.gitrepos import commit_tree, new_repo


def billion_laughs() -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi"):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    return text


HOSTILE_YAML = {
    "billion-laughs": (billion_laughs().encode(), "expands to more than"),
    "deep-flow": (("layers: " + "[" * 100_000 + "]" * 100_000 + "\n").encode(), "nested deeper than"),
    "deep-block": ("".join(" " * i + f"k{i}:\n" for i in range(500)).encode(), "nested deeper than"),
    "latin-1": ("layers:\n  - id: caf\xe9\n".encode("latin-1"), "not UTF-8: byte 0xe9"),
    "huge": (b"x: " + b"a" * (2 << 20) + b"\n", "a rules file may have at most"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_hostile_rules_yaml_is_exit_3_fast(case, gfxgate_cli, tmp_path):
    content, needle = HOSTILE_YAML[case]
    assert case != "billion-laughs" or len(content) < 600
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "layers.yaml").write_bytes(content)
    with cpu_time() as spent:
        proc = gfxgate_cli("scan", "--target", "gfx900", "--offline", "--rules", str(rules), timeout=60, cwd=tmp_path)
    elapsed = spent.seconds
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert needle in proc.stderr and "layers.yaml" in proc.stderr
    assert elapsed < 5, elapsed


def test_a_few_aliases_are_still_fine(tmp_path):
    from gfxgate.datafiles import check_yaml_shape

    check_yaml_shape("ok.yaml", "base: &b {x: 1}\nuse: [*b, *b]\n")
    with pytest.raises(RuleError, match="more than 256 YAML aliases"):
        check_yaml_shape("many.yaml", "b: &b 1\nuse: [" + ", ".join(["*b"] * 300) + "]\n")


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 1001 + "]" * 1001,  # past libyaml's own flow limit (PyYAML 6.0.4's libyaml refuses it)
        "x: " + "{a: " * 20_000 + "}" * 20_000,  # the 20,000 deep, as flow mappings
        "x: " + "[" * 400_000,  # near the size limit, never closed
        "".join(" " * i + f"k{i}:\n" for i in range(200)),  # block nesting
    ],
)
def test_deep_yaml_is_the_depth_error_with_either_parser(text):
    """Issue 28 defect 17: whichever parser refuses first, the depth limit words it (no RecursionError)."""
    from gfxgate.datafiles import check_yaml_shape

    with pytest.raises(RuleError, match="deep.yaml:[0-9]+: nested deeper than 64 levels"):
        check_yaml_shape("deep.yaml", text)


def test_yaml_both_parsers_refuse_is_one_invalid_yaml_line():
    from gfxgate.datafiles import check_yaml_shape

    with pytest.raises(RuleError, match=r"^bad.yaml:2: invalid YAML: "):
        check_yaml_shape("bad.yaml", "a: [1, 2\nb: ]]\n")


def test_catastrophic_regex_cannot_hang_the_go_matcher(tmp_path):
    r"""`^(\w+\s?)*$` over a long Go string literal: exponential with Python's re, linear with RE2.
    Run in a child with a timeout, so a regression fails instead of hanging the suite."""
    import sys
    import textwrap

    probe = textwrap.dedent(f"""
        from pathlib import Path
        from gfxgate.matchers import NoMatch
        from tests.matchers.test_matchers import run
        go = 'package p\\n\\nfunc F() string {{ return "' + "word " * 2000 + '!" }}\\n'
        try:
            run(Path({str(tmp_path)!r}), "go-source", {{"p.go": go}}, ["gfx900"], find="string", pattern=r"^(\\w+\\s?)*$")
        except NoMatch:
            print("no match")
    """)
    root = Path(__file__).resolve().parents[2]
    with cpu_time() as spent:  # the child's CPU seconds (counted once it exited)
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=root)
    assert out.returncode == 0 and out.stdout.strip() == "no match", out.stderr
    assert spent.seconds < 10, spent.seconds


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?<!NOT )WIN32", r"x(?=y)", r"a{1000}{1000}"])
def test_patterns_outside_the_dialect_are_rule_errors(pattern):
    with pytest.raises(RuleRegexError, match="RE2 syntax|bad regex"):
        rule_regex(pattern)


def test_bad_rule_regex_is_reported_at_load_with_the_file(tmp_path):
    from tests.matchers.test_matchers import rule
    from gfxgate.matchers import MATCHERS

    with pytest.raises(RuleError, match=r"params.pattern: bad regex '\(a\)\\\\1'"):
        MATCHERS["go-source"].check_params(rule("go-source", find="string", pattern=r"(a)\1"))


def test_every_matcher_checks_its_regexes_in_the_dialect_with_file_and_line(tmp_path):
    """pattern-status compiled its checks with Python re: a backreference loaded, where RE2 refuses it."""
    import shutil

    from gfxgate.gate.ruleset import load_rules

    root = Path(__file__).resolve().parents[2] / "rules"
    shutil.copy(root / "layers.yaml", tmp_path)
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "probe.yaml").write_text(
        textwrap.dedent(r"""
        layer: vulkan
        rules:
          - id: fine
            title: a rule that loads
            repo: ollama
            paths: [a.go]
            matcher: pattern-status
            params: {checks: [{pattern: 'ok', status: allowed, summary: fine}]}
          - id: probe
            title: a backreference
            repo: ollama
            paths: [a.go]
            matcher: pattern-status
            params: {checks: [{pattern: '(a)\1', status: allowed, summary: never}]}
    """)
    )
    gates = tmp_path / "gates" / "probe.yaml"
    with pytest.raises(RuleError, match=re.escape(f"{gates}:10: rule probe: params.checks[0].pattern: bad regex")):
        load_rules(tmp_path)


@pytest.mark.parametrize(
    "pattern,needle",
    [
        (r"^ARG (?=ROCM)ROCM_?VERSION=(?P<version>\d+)", "invalid perl operator: (?="),  # fine for Python's re
        (r"^ARG ROCMVERSION=(?P<version>(\d)\1)", "invalid escape sequence: \\1"),  # a backreference: fine for re
        (r"^ARG ROCMVERSION=(?P<version>\d+", "missing )"),
    ],
)
def test_a_coupling_pattern_outside_the_dialect_is_exit_3_at_its_line(pattern, needle, gfxgate_cli, tmp_path):
    """rules/pins.toml's couplings were compiled with Python re, the one regex of rules data that was; now RE2 too."""
    shipped = (Path(__file__).resolve().parents[2] / "rules" / "pins.toml").read_text(encoding="utf-8")
    good = next(line for line in shipped.splitlines() if line.startswith("pattern = ") and "(?P<version>" in line)
    pins = tmp_path / "pins.toml"
    pins.write_text(shipped.replace(good, f"pattern = '{pattern}'"), encoding="utf-8")
    line = shipped.splitlines().index(good) + 1
    proc = gfxgate_cli("pins", "show", "--pins", str(pins), timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"gfxgate: error: {pins}:{line}: coupling rocm-docs: pattern: bad regex ")
    assert needle in proc.stderr and "RE2 syntax" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_grep_is_one_dialect_on_folders_and_git(tmp_path):
    """The same tree as a folder and as a git tag: a rule regex finds the same lines. (`\\d`, `\\s` and
    `(?i)` are not POSIX ERE, so `git grep -E` used to answer differently.)"""
    files = {"a.txt": "gfx900 x\nGFX1030\nnothing\r\n", "sub/b.c": "#define N 42\n", "bin.dat": "gfx900\0binary\n"}
    repo = new_repo(tmp_path / "repo")
    commit_tree(repo, files, "one", tag="v1")
    folder = Path(repo.working_tree_dir)
    git_source = GitSource(GitRepo("r", folder.as_uri(), offline=False), "v1")
    dir_source = DirectorySource("r", folder)
    paths = sorted(files)
    try:
        for pattern in (r"(?i)gfx\d+", r"N\s+\d+", r"^nothing\r$", r"gfx900"):
            on_git = [(h.path, h.line, h.text) for h in git_source.grep(pattern, paths)]
            on_dir = [(h.path, h.line, h.text) for h in dir_source.grep(pattern, paths)]
            assert on_git == on_dir, pattern
            assert on_git, pattern
        assert [h.line for h in git_source.grep(r"(?i)gfx\d+", paths)] == [1, 2]  # bin.dat skipped on both
        with pytest.raises(RuleRegexError):
            git_source.grep(r"(a)\1", paths)
    finally:
        git_source.close()


@pytest.mark.parametrize(
    "pattern,needle",
    [
        (r"^v(?!0)\d+\.\d+\.\d+$", "invalid perl operator: (?!"),  # a lookahead: fine for Python's re
        (r"^v(\d)\.\1$", "invalid escape sequence: \\1"),
        (r"^v(\d+", "missing )"),
    ],
)
def test_a_release_tags_pattern_outside_the_dialect_is_exit_3_at_its_line(pattern, needle, gfxgate_cli, tmp_path):
    """rules/pins.toml's release_tags were compiled with Python re when resolving NAME=latest (the last regex of
    rules data that was): now RE2, checked when pins.toml loads, so a bad one fails every command at its line."""
    shipped = (Path(__file__).resolve().parents[2] / "rules" / "pins.toml").read_text(encoding="utf-8")
    lines = shipped.splitlines()
    good = next(n for n, line in enumerate(lines) if line.startswith("release_tags = "))
    table = next(lines[n].strip() for n in range(good, -1, -1) if lines[n].startswith("["))
    lines[good] = f"release_tags = '{pattern}'"
    pins = tmp_path / "pins.toml"
    pins.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = gfxgate_cli("pins", "show", "--pins", str(pins), timeout=60)
    assert proc.returncode == 3, proc.stderr
    name = table.strip("[]").split(".", 1)[1].strip('"')
    assert proc.stderr.startswith(f"gfxgate: error: {pins}:{good + 1}: source {name}: release_tags: bad regex "), (
        proc.stderr
    )
    assert needle in proc.stderr and "RE2 syntax" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_no_rule_regex_bypasses_the_safe_dialect():
    """Every regex taken from rule data is compiled by gfxgate.saferegex (a new matcher calling re.compile on
    its params would bring back the catastrophic-backtracking hang)."""
    import re

    root = Path(__file__).resolve().parents[2] / "gfxgate"
    pattern = re.compile(
        r"\bre\.(compile|search|match|fullmatch|finditer|findall)\((rule\.)?params\b|\bre\.compile\((check|spec|coupling|pin)\."
    )
    offenders = [
        f"{p.relative_to(root)}:{n}: {line.strip()}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_text_libyaml_accepts_and_pyyaml_rejects_is_still_a_rule_error():
    """Found by benchmarks/fuzz.py: a few deleted bytes in a real gates file; libyaml loads it, the schema
    rejects it, and composing line marks with PyYAML's own parser raised ParserError (a traceback)."""
    from gfxgate.datafiles import _parse_yaml

    # the real file, plus the rule the fuzzer mutated as it was then (ollama-vulkan-shipped has since moved to the
    # release-archive matcher): the finding is about parsing, so the input stays the one that was found
    real = (Path(__file__).resolve().parents[2] / "rules" / "gates" / "vulkan.yaml").read_text(encoding="utf-8") + (
        "  - id: ollama-vulkan-shipped-as-found\n"
        "    title: Vulkan build copied into the Linux release archive (Dockerfile)\n"
        "    repo: ollama\n"
        "    paths: [Dockerfile]\n"
        "    matcher: pattern-status\n"
        "    params:\n"
        "      checks:\n"
        "        - {pattern: '^COPY --from=(llama-server-)?vulkan\\b', status: allowed, summary: \"shipped ({match})\"}\n"
    )
    needle = "pattern: '^COPY --from=(llama-server-)?vulkan"
    assert needle in real
    broken = real.replace("pattern: '^COPY --f", "patt", 1)
    with pytest.raises(RuleError, match="is a required property"):
        _parse_yaml(Path("vulkan.yaml"), broken.encode(), "gates")
