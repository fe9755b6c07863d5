"""The pull-request check: the gate matrix at the pins of a base git ref vs. the working tree's pins.

The pins file (and, when it lives in the same repository, the rules folder) is read at the base
ref with ``git show`` / ``git ls-tree`` — nothing is checked out — and both matrices are computed
live from the upstream sources, then compared with :func:`gfxgate.prcheck.diff.diff_matrices`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from gfxgate.errors import RuleError, SourceError, UsageError
from gfxgate.prcheck.diff import MatrixDiff, diff_matrices, fail_closed
from gfxgate.prcheck.pins import inside_repo
from gfxgate.records import dataclass
from gfxgate.sources.gitrepo import run_git, work_tree_root
from gfxgate.datafiles import MAX_YAML_BYTES
from gfxgate.gate.ruleset import load_rules
from gfxgate.gate.scan import FactsRequest, scan_matrix
from gfxgate.trace.workarounds import check_steps
from gfxgate.resources import rules_dir
from gfxgate.sources.resolve import load_pins


def toplevel(path: Path) -> Path:
    top = work_tree_root(path)
    if top is None:
        raise UsageError(
            f"{path} is not inside a git repository",
            hint="`gfxgate check` compares against a git ref of this repository",
        )
    return top


def resolve_ref(top: Path, ref: str) -> str:
    out = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=top)
    if out.returncode != 0 or not out.stdout.strip():
        raise SourceError(
            f"unknown git ref {ref!r} in {top}",
            hint="fetch it first (actions/checkout with fetch-depth: 0), e.g. origin/main or a commit SHA",
        )
    return out.stdout.strip()


def show_at(top: Path, commit: str, relpath: str) -> bytes | None:
    """A pins or rules file at ``commit``; its size is asked of git first, so an oversized blob is never read."""
    size = run_git(["cat-file", "-s", f"{commit}:{relpath}"], cwd=top)
    if size.returncode != 0 or not size.stdout.strip().isdigit():
        return None
    if int(size.stdout) > MAX_YAML_BYTES:
        raise RuleError(
            f"{relpath} at {commit[:12]}: {int(size.stdout)} bytes; a pins or rules file may have at most "
            f"{MAX_YAML_BYTES}"
        )
    out = run_git(["cat-file", "blob", f"{commit}:{relpath}"], cwd=top, text=False)
    return out.stdout if out.returncode == 0 else None


def rules_at(top: Path, commit: str, rules_rel: str, dest: Path) -> Path | None:
    """Write layers.yaml and gates/*.yaml of ``rules_rel`` at ``commit`` under ``dest``; None when absent there."""
    listing = run_git(["ls-tree", "-r", "-z", "--name-only", commit, "--", rules_rel], cwd=top)
    names = [n for n in listing.stdout.split("\0") if n]
    wanted = [
        n
        for n in names
        if n == f"{rules_rel}/layers.yaml" or (n.startswith(f"{rules_rel}/gates/") and n.endswith(".yaml"))
    ]
    if listing.returncode != 0 or f"{rules_rel}/layers.yaml" not in wanted:
        return None
    for name in wanted:
        rel = name[len(rules_rel) + 1 :]
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(show_at(top, commit, name) or b"")
    return dest


@dataclass(frozen=True)
class PrCheckResult:
    base_ref: str
    base_commit: str
    pins_path: Path
    pins_rel: str
    base_rules: bool  # the rules were also read at the base ref
    old: dict[str, Any]
    new: dict[str, Any]
    diff: MatrixDiff


def run_check(
    targets: list,
    base_ref: str,
    pins_path: Path,
    *,
    sources: dict[str, str] | None = None,
    offline: bool = False,
    rules_root: Path | None = None,
    os: str = "linux",
) -> PrCheckResult:
    pins_path = pins_path.resolve()
    if not pins_path.is_file():
        raise UsageError(f"{pins_path}: no such pins file")
    top = toplevel(pins_path)
    commit = resolve_ref(top, base_ref)
    pins_rel = inside_repo(pins_path, top)
    if pins_rel is None:  # top is the repository git found for the file: never outside it
        raise UsageError(f"{pins_path}: not inside the git repository {top}")
    base_text = show_at(top, commit, pins_rel)
    if base_text is None:
        raise SourceError(
            f"{pins_rel} does not exist at {base_ref} ({commit[:12]})",
            hint="a new pins file has no base to compare with; scan it with `gfxgate scan --live`",
        )
    new_pins = load_pins(pins_path)
    rules_folder = (rules_root or rules_dir()).resolve()
    rules_rel = inside_repo(rules_folder, top)
    with tempfile.TemporaryDirectory(prefix="gfxgate-check-") as tmp:
        tmp_path = Path(tmp)
        base_pins_file = tmp_path / "pins.toml"
        base_pins_file.write_bytes(base_text)
        base_pins = load_pins(base_pins_file)
        base_rules = rules_at(top, commit, rules_rel, tmp_path / "rules") if rules_rel else None
        # Both rule sets are loaded before any source is read: a broken (or hostile) rules file in the pull
        # request is exit 3 at once, not after a live scan of the base (or a network failure hiding it).
        for folder, pins in ((rules_root, new_pins), (base_rules or rules_root, base_pins)):
            if folder is not None:
                load_rules(folder, repos=set(pins.sources) | set(pins.layouts))
        old = scan_matrix(
            targets,
            FactsRequest(
                live=True, sources=sources, offline=offline, pins=base_pins, rules_root=base_rules or rules_root, os=os
            ),
            check_steps=check_steps,
        )
        new = scan_matrix(
            targets,
            FactsRequest(live=True, sources=sources, offline=offline, pins=new_pins, rules_root=rules_root, os=os),
            check_steps=check_steps,
        )
    old_json, new_json = old.to_json(), new.to_json()
    fail_closed(old_json, new_json, command="check")
    return PrCheckResult(
        base_ref,
        commit,
        pins_path,
        pins_rel,
        base_rules is not None,
        old_json,
        new_json,
        diff_matrices(old_json, new_json),
    )
