"""docs/rules.md is generated (gfxgate/report/rules_reference.py, written by `gfxgate samples`): it must be what the
schemas and rules give now, as the samples must (issue 40)."""

from __future__ import annotations

from tests.docs.examples import ROOT


def test_the_rules_reference_is_not_stale():
    from gfxgate.report.rules_reference import render_rules_reference

    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == render_rules_reference(), (
        "docs/rules.md is stale: run `gfxgate samples`"
    )


def test_the_rules_reference_names_every_matcher_layer_and_message():
    from gfxgate.datafiles import load_yaml
    from gfxgate.matchers import MATCHERS
    from gfxgate.resources import rules_dir

    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for name in MATCHERS:
        assert f"| `{name}` |" in text
    for layer in load_yaml(rules_dir() / "layers.yaml")["layers"]:
        assert f"| `{layer['id']}` |" in text
    for message in load_yaml(rules_dir() / "messages.yaml")["messages"]:
        assert f"| `{message['id']}` |" in text


def test_samples_check_reports_a_stale_reference(tmp_path):
    """`gfxgate samples --check` over a checkout whose docs/rules.md was edited names it."""
    from gfxgate.app.samples import SamplesRequest, samples

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("# edited by hand\n")
    (tmp_path / "samples").mkdir()
    assert "../docs/rules.md" in samples(SamplesRequest(tmp_path / "samples", check=True)).stale
