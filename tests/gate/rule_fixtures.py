"""Rule fixtures: ``tests/rules/<rule-id>/<case>/`` trees and the expectations annotated in them.

The format is described in tests/rules/README.md; tests/gate/test_rule_fixtures.py runs every case. Workaround
checks have the same layout under ``tests/workarounds/<workaround-id>/<case>/`` (``live:`` / ``stale:`` /
``not-applicable:`` annotations,
tests/gate/test_workaround_fixtures.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from gfxgate.gate.engine import MATCHED, NO_MATCH, NOT_APPLICABLE, evaluate_rule
from gfxgate.sources.directory import DirectorySource
from gfxgate.targets import catalog

FIXTURES = Path(__file__).resolve().parents[1] / "rules"
WORKAROUND_FIXTURES = Path(__file__).resolve().parents[1] / "workarounds"
ANNOTATION = re.compile(
    r"^\s*(?:#|//|<!--|\.\.)\s*(?P<kind>ruleid|ok|live|stale|not-applicable|from|tree):\s*(?P<body>.*?)\s*(?:-->)?\s*$"
)
CASE_NOTE = "CASE.md"  # a case's annotations about the case itself (tree:, and the expectations on it); not copied
STATUS = re.compile(r"^(?P<target>(?:gfx[0-9a-z:+-]+|sm_[0-9]+))=(?P<status>[a-z-]+)$")  # an AMD or an NVIDIA target
ORIGIN = re.compile(r"^(?P<repo>[\w.-]+)@(?P<ref>[^\s:]+):\S")  # ollama@v0.17.5:CMakeLists.txt (lines …)


@dataclass(frozen=True)
class Annotation:
    kind: str  # ruleid | ok (tests/rules), live | stale | not-applicable (tests/workarounds)
    body: str
    path: str
    line: int  # the annotation's line
    evidence_line: int | None  # the line after it, when it is not blank


@dataclass(frozen=True)
class Expectation:
    kind: str  # ruleid | ok
    rule_id: str
    statuses: tuple[tuple[str, str], ...]
    path: str
    line: int  # the annotation's line
    evidence_line: int | None  # the line after it, when it is not blank


def copy_case(case: Path, tree: Path) -> list[Annotation]:
    """Copy ``case`` to ``tree`` with annotation lines blanked (line numbers kept); the annotations, ``from:`` left out.

    A case whose ``CASE.md`` says ``tree: RULE-ID/REF`` reads the files of that rule fixture case (tests/rules/), with
    their annotations blanked and not counted here, and then its own: the same real upstream excerpt is kept once
    where a workaround and a gate rule are tested on it, each with its own expectations."""
    found: list[Annotation] = []
    note = case / CASE_NOTE
    if note.is_file():
        for line in note.read_text(encoding="utf-8").splitlines():
            match = ANNOTATION.match(line)
            if match and match["kind"] == "tree":
                shared = (FIXTURES / match["body"]).resolve()
                assert shared.is_dir() and shared.is_relative_to(FIXTURES.resolve()), (
                    f"{note}: no fixture case {match['body']}"
                )
                copy_case(shared, tree)
            elif match and match["kind"] != "from":
                found.append(Annotation(match["kind"], match["body"], CASE_NOTE, 0, None))
    for path in sorted(p for p in case.rglob("*") if p.is_file() and p != note):
        rel = path.relative_to(case).as_posix()
        lines = path.read_text(encoding="utf-8").split("\n")
        out = []
        for number, line in enumerate(lines, 1):
            match = ANNOTATION.match(line)
            if not match:
                out.append(line)
                continue
            out.append("")
            if match["kind"] == "from":
                continue
            following = next((n for n in range(number, len(lines)) if not ANNOTATION.match(lines[n])), None)
            evidence = following + 1 if following is not None and lines[following].strip() else None
            found.append(Annotation(match["kind"], match["body"], rel, number, evidence))
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("\n".join(out), encoding="utf-8")
    return found


def read_case(case: Path, tree: Path) -> list[Expectation]:
    """Copy ``case`` to ``tree`` with annotation lines blanked; the expectations they state."""
    found: list[Expectation] = []
    for a in copy_case(case, tree):
        assert a.kind in ("ruleid", "ok"), f"{a.path}:{a.line}: {a.kind}: belongs in tests/workarounds/"
        rule_id, *pairs = a.body.split()
        statuses = []
        for pair in pairs:
            parsed = STATUS.match(pair)
            assert parsed, f"{a.path}:{a.line}: expected TARGET=STATUS, got {pair!r}"
            statuses.append((parsed["target"], parsed["status"]))
        assert (a.kind == "ruleid") == bool(statuses), f"{a.path}:{a.line}: ruleid: needs TARGET=STATUS, ok: none"
        found.append(Expectation(a.kind, rule_id, tuple(statuses), a.path, a.line, a.evidence_line))
    return found


def origins(case: Path) -> set[tuple[str, str]]:
    """(repository, ref) of every ``from:`` line of a case that names one (``ollama@v0.17.5:path``)."""
    found = set()
    for path in (p for p in case.rglob("*") if p.is_file()):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = ANNOTATION.match(line)
            origin = ORIGIN.match(match["body"]) if match and match["kind"] == "from" else None
            if origin:
                found.add((origin["repo"], origin["ref"]))
    return found


def assert_expectations(rule, facts, expectations: list[Expectation], evidence) -> None:
    """Assert every annotation against a rule's ``facts`` (RuleFacts); ``evidence(expectation, finding)`` is the
    check of an annotated evidence line."""
    cat = catalog()
    for e in expectations:
        where = f"{e.path}:{e.line}"
        if e.kind == "ok":
            assert facts.state in (NO_MATCH, NOT_APPLICABLE), (
                f"{where}: the rule should find nothing, got {facts.state}"
            )
            continue
        assert facts.state == MATCHED, f"{where}: {facts.reason}"
        for target, status in e.statuses:
            finding = evaluate_rule(rule, facts.facts, cat.parse_target(target), cat)
            assert finding.status.value == status, f"{where}: {target} is {finding.status.value}: {finding.summary}"
            if e.evidence_line is not None:
                evidence(e, finding)


class OneSource:
    def __init__(self, source: DirectorySource) -> None:
        self.source = source

    def get(self, name: str) -> DirectorySource:
        return self.source


def cases(root: Path = FIXTURES) -> list:
    if not root.is_dir():
        return []
    return [
        pytest.param(rule.name, case, id=f"{rule.name}/{case.name}")
        for rule in sorted(p for p in root.iterdir() if p.is_dir())
        for case in sorted(p for p in rule.iterdir() if p.is_dir())
    ]
