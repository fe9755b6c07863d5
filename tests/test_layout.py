"""Where a test lives (issue 40 item 2; docs/testing.md, "Where a test lives"): the folders of ``tests/`` mirror the
package. A test of ``gfxgate/<name>/`` or ``gfxgate/<name>.py`` is in ``tests/<name>/``; a folder that names
neither is in ``FOLDERS`` with its reason; the top level holds only tests of the whole program (``WHOLE_PROGRAM``)
and helpers that tests of several folders share."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "gfxgate"

# folders of tests/ that name no package or module of gfxgate, and why
FOLDERS = {
    "architecture": "the package's structure across packages: layers, use cases, imports (ARCHITECTURE.md)",
    "docs": "the examples of README.md and docs/*.md, and the generated rules reference",
    "rules": "data: each gate rule's annotated upstream excerpts (tests/rules/README.md), read by tests/gate/",
    "workarounds": "data: each workaround check's annotated cases, read by tests/gate/test_workaround_fixtures.py",
}
# the test modules of the top level: the whole program, or the suite itself
WHOLE_PROGRAM = {
    "test_console_script.py": "the console script's entry",
    "test_exit_codes.py": "the README's exit-code table, through the installed script",
    "test_consistency.py": "one situation, one answer and exit code, whichever command reaches it",
    "test_formats_everywhere.py": "every command's --format",
    "test_inert_outputs.py": "hostile text through every command's outputs",
    "test_packaging.py": "the wheel holds what the checkout holds",
    "test_public_api.py": "every package's __all__",
    "test_readme_run_it.py": "the README's first command on a fresh machine",
    "test_import_modes.py": "the suite: both pytest import modes collect the same tests",
    "test_inprocess.py": "the suite: the in-process command line answers what the script answers",
    "test_suite_setup.py": "the suite: xdist, marks, shared fixtures",
    "test_layout.py": "the suite: where a test lives",
}


def gfxgate_names() -> set[str]:
    """The packages (``gfxgate/<name>/__init__.py``) and top-level modules (``gfxgate/<name>.py``) of gfxgate."""
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    modules = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    return packages | modules


def folders() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__" and not p.name.startswith("."))


def test_every_folder_names_a_package_or_module_of_gfxgate_or_says_why_not():
    names = gfxgate_names()
    assert {"gate", "answer", "app", "matchers", "sources", "datacache", "serial", "targets"} <= names  # the reading
    strays = [p.name for p in folders() if p.name not in names and p.name not in FOLDERS]
    assert not strays, (
        f"tests/{strays[0]}/ names no package or module of gfxgate: move its tests to the folder of what they test, or add it to FOLDERS with why (docs/testing.md)"
    )


def test_the_list_of_other_folders_holds_only_folders_that_exist_and_name_nothing_of_gfxgate():
    present = {p.name for p in folders()}
    assert not set(FOLDERS) - present, "a folder of FOLDERS is gone: remove it from the list"
    assert not set(FOLDERS) & gfxgate_names(), "a folder of FOLDERS names a gfxgate package or module"


def test_the_top_level_holds_only_tests_of_the_whole_program():
    top = {p.name for p in TESTS.glob("test_*.py")}
    strays = sorted(top - set(WHOLE_PROGRAM))
    assert not strays, (
        f"tests/{strays[0]} is at the top level: move it to tests/<package or module it tests>/, or add it to WHOLE_PROGRAM with why"
    )
    assert not set(WHOLE_PROGRAM) - top, "a module of WHOLE_PROGRAM is gone: remove it from the list"


def test_a_top_level_helper_is_shared_by_tests_of_several_places():
    """A helper module at the top level (``tests/x.py``) is imported from at least two places (the top level, a
    folder of tests/, benchmarks/); a helper of one folder's tests lives in that folder."""
    helpers = sorted(
        p.stem for p in TESTS.glob("*.py") if not p.stem.startswith("test_") and p.stem not in ("__init__", "conftest")
    )
    sources = [p for p in (*TESTS.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")) if "__pycache__" not in p.parts]
    texts = {p: p.read_text(encoding="utf-8") for p in sources}
    alone = {}
    for name in helpers:
        used = re.compile(rf"\btests\.{name}\b|\bfrom tests import [\w, ]*\b{name}\b")
        places = set()
        for path, text in texts.items():
            if path.stem == name and path.parent == TESTS or not used.search(text):
                continue
            rel = path.relative_to(ROOT).parts
            places.add(rel[0] if rel[0] != "tests" else ("tests" if len(rel) == 2 else f"tests/{rel[1]}"))
        if len(places) < 2:
            alone[name] = sorted(places)
    assert not alone, f"top-level helpers used from one place only (move them there): {alone}"
