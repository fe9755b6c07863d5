"""Issue 28: the report formatters' fuzz harness (benchmarks/fuzz.py) made fast enough for 100,000 cases per format
without checking less: the substitution compiled once per result type, the placeholders' side of the comparison
computed once, a report's table rows read in one cmark-gfm parse. Each shortcut is held here to the slow way it
replaces.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from benchmarks import fuzz


@dataclasses.dataclass(frozen=True)
class Leaf:
    name: str
    kind: str
    size: int


@dataclasses.dataclass(frozen=True)
class Tree:
    title: str
    leaves: tuple[Leaf, ...]
    best: Leaf | None
    tags: list[str]
    table: dict


def _tree() -> Tree:
    a, b = Leaf("a", "kept", 1), Leaf("b", "kept", 2)
    return Tree("title", (a, b, Leaf("a", "kept", 3)), a, ["x", "a"], {"k": "v", ("t", "u"): b})


def test_substitution_replaces_every_string_once_keeps_the_kept_and_shares_what_was_shared():
    tree, asked = _tree(), []

    def upper(s: str) -> str:
        asked.append(s)
        return s.upper() + "!"

    new = fuzz.substitute(tree, upper, frozenset({"kind"}))
    assert new.title == "TITLE!" and [leaf.name for leaf in new.leaves] == ["A!", "B!", "A!"]
    assert {leaf.kind for leaf in new.leaves} == {"kept"} and [leaf.size for leaf in new.leaves] == [1, 2, 3]
    assert new.tags == ["X!", "A!"] and new.table == {"k": "V!", ("T!", "U!"): new.leaves[1]}
    assert new.best is new.leaves[0]  # a formatter's "is" (the best route is one of the routes) still holds
    assert sorted(asked) == ["a", "b", "t", "title", "u", "v", "x"]  # each distinct string asked once
    assert tree.title == "title" and tree.leaves[0].name == "a"  # the base is untouched, the next case starts over
    again = fuzz.substituter(tree, frozenset({"kind"}))(str.swapcase)
    assert again.title == "TITLE" and again.leaves[1].name == "B"


def test_the_rows_of_a_report_are_read_in_one_parse_as_each_alone():
    good = ["| a | b | c |", "|---|---|---|", "| `x\\|y` | b | \\| |"]
    assert fuzz._rows_have_cells([(row, 3) for row in good])
    assert all(fuzz._row_has_cells(row, 3) for row in good)
    split = "| x|y | b | c |"
    for bad in (split, "```", "<!--", "    | a | b | c |", "> | a | b | c |"):
        rows = [(good[0], 3), (bad, 3), (good[2], 3)]
        assert not fuzz._rows_have_cells(rows), bad
        # the oracle then names the row, as it did when it read each row alone
        md = "\n".join(row for row, _ in rows) + "\n"
        plain = "\n".join([good[0], "| zq0q | b | c |", good[2]]) + "\n"
        problem = fuzz.md_findings(md, plain)
        assert problem is not None and ("line 2" in problem or "skeleton" in problem), (bad, problem)


def test_a_row_that_opens_a_block_cannot_hide_a_split_row_after_it():
    rows = [("| ``` | b | c |", 3), ("| x|y | b | c |", 3)]
    assert not fuzz._rows_have_cells(rows)
    assert not fuzz._row_has_cells(*rows[1])


@pytest.mark.parametrize("name", ["md:scan", "md:sweep"])
def test_the_placeholders_side_computed_once_is_the_one_computed_each_case(name):
    kind, fmt = fuzz.report_formats()[name]
    base = kind.build()
    names: dict[str, str] = {}

    def to_plain(s: str) -> str:
        if s not in names:
            names[s] = f"zq{len(names)}q" if s else s
        return names[s]

    once = fuzz._plan(kind, fmt, base).plain
    fresh = fuzz._Plain.of(kind.md(fuzz.substitute(base, to_plain, kind.keep)))
    assert once == fresh and once.rows and once.skeleton
    rng = random.Random(5)
    for _ in range(20):
        problem, _table = fuzz.report_case(kind, fmt, base, rng)
        assert problem is None, problem


def test_a_case_cut_short_keeps_its_replacements_for_replay():
    """A case over the CPU cap is interrupted inside the formatter: the replacements made so far are still written
    with the finding (the first run's finding had none to replay)."""

    def md(tree: Tree) -> str:
        if not tree.title.startswith("zq"):  # the hostile side: as if the timer fired here
            raise fuzz.CaseTimeout()
        return "| " + tree.title + " |\n|---|\n"

    kind = fuzz.ReportType("cut-short", _tree, md, None, frozenset({"kind"}))
    table: dict[str, str] = {}
    with pytest.raises(fuzz.CaseTimeout):
        fuzz.report_case(kind, "md", _tree(), random.Random(1), table)
    assert set(table) == {"a", "b", "t", "title", "u", "v", "x"} and all(table.values())
