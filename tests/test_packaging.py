"""The wheel carries everything a source checkout has: every package, schema, template and rules file."""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_is_listed():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gfxgate").rglob("__init__.py")}
    assert found <= set(CONFIG["packages"])


def _covered(package_dir: Path, globs: list[str], path: Path) -> bool:
    rel = path.relative_to(package_dir).as_posix()
    return any(fnmatch.fnmatch(rel, g) or (g.startswith("**/") and fnmatch.fnmatch(rel, g[3:])) for g in globs)


def test_every_data_file_is_package_data():
    data = CONFIG["package-data"]
    for path in (ROOT / "gfxgate").rglob("*"):
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
            owner = ".".join(path.relative_to(ROOT).parent.parts)
            while owner not in data and "." in owner:
                owner = owner.rsplit(".", 1)[0]
            package_dir = ROOT.joinpath(*owner.split("."))
            assert _covered(package_dir, data.get(owner, []), path), f"{path.relative_to(ROOT)} is not package data"
    rules = ROOT / "rules"
    for path in rules.rglob("*"):
        if path.is_file():
            assert _covered(rules, data["gfxgate._rules"], path), f"{path.relative_to(ROOT)} is not shipped"
    assert CONFIG["package-dir"]["gfxgate._rules"] == "rules"
