"""Imports at the top (issue 40 item 4): a module's dependencies are read at its top, except at the command boundary
(``cli/``, ``app/``: a command imports its pipeline when it runs, so `gfxgate --help` stays fast), for the heavy leaves
(tree-sitter, PIL, Hyperscan, ollama) and where the allow-list below says why: the speed budget
(benchmarks/bench_budget.py: a budgeted command that loads the module without the import would pay for it), or an import
circle. The list only shrinks: an entry whose import has
moved to the top (or is gone) fails the second test, so it is deleted with the move."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "gfxgate"
BOUNDARY = ("cli/", "app/")
HEAVY = ("tree_sitter", "PIL", "hyperscan", "ollama")  # and their submodules; tree_sitter_c etc. too

# file (under gfxgate/) -> {imported module: why it is imported inside a function}
ALLOWED: dict[str, dict[str, str]] = {
    "artifacts/bundle.py": {
        "gfxgate.targets": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "hashlib": "start-up: `doctor --root`, `artifacts` of a file without GPU code load this module without it",
        "zstandard": "start-up: `artifacts` of a file without GPU code loads this module without it",
    },
    "artifacts/elf.py": {
        "gfxgate.datafiles": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "gfxgate.resources": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "msgpack": "start-up: `artifacts` of a file without GPU code loads this module without it",
    },
    "artifacts/kpack.py": {
        "msgpack": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "zstandard": "start-up: `artifacts` of a file without GPU code loads this module without it",
    },
    "artifacts/render.py": {
        "gfxgate.report.markdown": "start-up: `artifacts` of a file without GPU code loads this module without it",
    },
    "artifacts/scan.py": {
        "concurrent.futures": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "gfxgate.targets": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "hashlib": "start-up: `doctor --root`, `artifacts` of a file without GPU code load this module without it",
    },
    "datafiles.py": {
        "gfxgate.matchers": "start-up: `diagnose LOG` loads this module without it",
        "jsonschema": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
        "tomli": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
        "tomllib": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
        "yaml": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
    },
    "diagnose/__init__.py": {
        "gfxgate.diagnose.analyse": "start-up: `doctor --root` loads this module without it",
        "gfxgate.diagnose.catalogue": "start-up: `doctor --root` loads this module without it",
        "gfxgate.diagnose.reader": "start-up: `doctor --root` loads this module without it",
        "gfxgate.diagnose.upstream": "start-up: `diagnose LOG`, `doctor --root` load this module without it",
    },
    "diagnose/analyse.py": {
        "gfxgate.diagnose.conclude": "circle: gfxgate.diagnose.conclude imports gfxgate.diagnose.analyse at its top",
    },
    "diagnose/catalogue.py": {
        "gfxgate.gate.ruleset": "start-up: `diagnose LOG` loads this module without it",
        "gfxgate.sources.resolve": "start-up: `diagnose LOG` loads this module without it",
        "yaml": "start-up: `diagnose LOG` loads this module without it",
    },
    "diagnose/reader.py": {
        "gfxgate.host.journal": "start-up: `diagnose LOG` loads this module without it",
        "shutil": "start-up: `diagnose LOG` loads this module without it",
    },
    "doctor/examine.py": {
        "gfxgate.doctor.windows": "start-up: `doctor --root` of a Linux tree loads this module without it",
        "gfxgate.diagnose": "start-up: `doctor --root` without logs loads this module without it",
        "gfxgate.diagnose.analyse": "start-up: `doctor --root` loads this module without it",
        "gfxgate.diagnose.summary": "start-up: `doctor --root` loads this module without it",
        "gfxgate.doctor.live": "start-up: `doctor --root` loads this module without it",
        "gfxgate.doctor.nvidia_machine": "start-up: `doctor --root` loads this module without it",
        "gfxgate.sweep.worklog": "start-up: `doctor --root` loads this module without it",
    },
    "doctor/render.py": {
        "gfxgate.report.terminal": "start-up: `doctor --root` loads this module without it",
    },
    "fsio.py": {
        "tempfile": "start-up: `scan -t gfx900`, `diagnose LOG` load this module without it",
    },
    "gate/route.py": {
        "gfxgate.gate.ruleset": "start-up: `diagnose LOG` loads this module without it",
    },
    "gate/ruleset.py": {
        "gfxgate.matchers": "start-up: `diagnose LOG` loads this module without it",
    },
    "gate/workarounds.py": {
        "gfxgate.artifacts.compat": "start-up: `diagnose LOG` loads this module without it",
        "gfxgate.gate.ruleset": "start-up: `diagnose LOG` loads this module without it",
        "gfxgate.sources.resolve": "start-up: `diagnose LOG` loads this module without it",
    },
    "host/install.py": {
        "gfxgate.datafiles": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "gfxgate.machine": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "gfxgate.resources": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "subprocess": "start-up: `doctor --root`, `artifacts` of a file without GPU code load this module without it",
        "sysconfig": "start-up: `doctor --root`, `artifacts` of a file without GPU code load this module without it",
    },
    "host/proc.py": {
        "ctypes": "ctypes loads libffi: only the reaping of a server's children calls prctl, inside its own try",
    },
    "host/rootfs.py": {
        "pwd": "start-up: `artifacts` of a file without GPU code loads this module without it",
    },
    "jsontext.py": {
        "orjson": "start-up: `scan -t gfx900` loads this module without it",
    },
    "matchers/release_archive.py": {
        "yaml": "start-up: `scan -t gfx900`, `doctor --root` load this module without it",
    },
    "report/__init__.py": {
        "gfxgate.report.markdown": "start-up: `artifacts` of a file without GPU code loads this module without it",
        "gfxgate.report.sarif": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root`, `artifacts` of a file without GPU code load this module without it",
        "gfxgate.report.terminal": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root`, `artifacts` of a file without GPU code load this module without it",
    },
    "resources.py": {
        "platformdirs": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
    },
    "sources/resolve.py": {
        "gfxgate.sources.directory": "start-up: `scan -t gfx900`, `doctor --root` load this module without it",
        "gfxgate.sources.gitrepo": "start-up: `scan -t gfx900`, `doctor --root` load this module without it",
        "gfxgate.suggest": "start-up: `scan -t gfx900`, `doctor --root` load this module without it",
    },
    "sources/versions.py": {
        "gfxgate.suggest": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
    },
    "sweep/deadline.py": {
        "httpcore": "httpx and httpcore: the ollama client's transport, imported only when a sweep talks to a server",
        "httpx": "httpx: the ollama client's transport, imported only when a sweep talks to a server",
    },
    "sweep/llamaserver.py": {
        "httpx": "httpx: the ollama client's transport, imported only when a sweep talks to a server",
    },
    "sweep/runner.py": {
        "httpx": "httpx: the ollama client's transport, imported only when a sweep talks to a server",
    },
    "sweep/worklog.py": {
        "jsonschema": "start-up: a sweep reads worklog lines without it (only a line fastjsonschema rejects needs it)",
    },
    "targets.py": {
        "gfxgate.suggest": "start-up: `scan -t gfx900`, `diagnose LOG`, `doctor --root` load this module without it",
    },
    "timeline/snapshot.py": {
        "gfxgate.gate.ruleset": "start-up: `diagnose LOG` loads this module without it",
        "gfxgate.history.walk": "start-up: `diagnose LOG`, `doctor --root` load this module without it",
        "gfxgate.sources.resolve": "start-up: `diagnose LOG` loads this module without it",
        "gfxgate.timeline.compute": "start-up: `diagnose LOG`, `doctor --root` load this module without it",
        "gfxgate.timeline.sentence": "start-up: `diagnose LOG`, `doctor --root` load this module without it",
        "hashlib": "start-up: `diagnose LOG`, `doctor --root` load this module without it",
    },
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def function_level_imports() -> dict[str, dict[str, list[int]]]:
    """file -> {imported module: lines} of every import inside a function, outside the command boundary and the
    heavy leaves (``from X import name`` counts as X.name when that is a module of gfxgate, else X)."""
    found: dict[str, dict[str, list[int]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(BOUNDARY):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module, is_package = _module(path), path.name == "__init__.py"
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        package = module if is_package else module.rsplit(".", 1)[0]
                        for _ in range(node.level - 1):
                            package = package.rsplit(".", 1)[0]
                        base = package + ("." + base if base else "")
                    names = []
                    for alias in node.names:
                        sub = Path(ROOT.parent, *f"{base}.{alias.name}".split("."))
                        names.append(
                            f"{base}.{alias.name}"
                            if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
                            else base
                        )
                else:
                    continue
                for name in names:
                    if not name.split(".")[0].startswith(HEAVY):
                        found.setdefault(rel, {}).setdefault(name, []).append(node.lineno)
    return found


def test_function_level_imports_are_allowed_with_a_reason():
    found = function_level_imports()
    unlisted = [
        f"gfxgate/{rel}:{lines[0]}: {name}"
        for rel, names in found.items()
        for name, lines in names.items()
        if name not in ALLOWED.get(rel, {})
    ]
    assert not unlisted, (
        "imports inside functions outside cli/ and app/: move them to the module's top, or list them "
        "in ALLOWED with the reason (the speed budget, an import circle):\n" + "\n".join(unlisted)
    )
    assert all(reason.strip() for names in ALLOWED.values() for reason in names.values())


def test_the_allow_list_has_no_stale_entry():
    found = function_level_imports()
    stale = [f"{rel}: {name}" for rel, names in ALLOWED.items() for name in names if name not in found.get(rel, {})]
    assert not stale, "ALLOWED lists imports that are no longer inside a function: delete them\n" + "\n".join(stale)


def test_the_walk_sees_a_function_level_import(tmp_path, monkeypatch):
    """The walk is not vacuous: an import added inside a function of a pipeline module is found."""
    package = tmp_path / "gfxgate" / "sweep"
    package.mkdir(parents=True)
    (package / "x.py").write_text("def f():\n    import json\n    from gfxgate.errors import InputError\n")
    (tmp_path / "gfxgate" / "cli").mkdir()
    (tmp_path / "gfxgate" / "cli" / "y.py").write_text("def g():\n    import json\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path / "gfxgate")
    assert function_level_imports() == {"sweep/x.py": {"json": [2], "gfxgate.errors": [3]}}
