"""rules/messages.yaml: schema errors with file:line, cross-checks at load, and the check at tags."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.diagnose import checks_called

from gfxgate.cli import main
from gfxgate.diagnose.catalogue import default_catalogue, load
from gfxgate.errors import RuleError
from gfxgate.gate.ruleset import default_rules
from gfxgate.gate.workarounds import default_workarounds
from tests.gitrepos import commit_tree, new_repo

GOOD = """\
messages:
  - id: one
    family: amdgpu-not-supported
    kind: failure
    layer: discovery
    implies: blocked
    title: t
    literal: 'amdgpu is not supported'
    pattern: 'amdgpu is not supported \\(supported types:(?P<supported>[^)]*)\\)'
    logs: [ollama]
    versions: {ollama: '<0.12.4'}
    printed_by:
      - {repo: ollama, paths: [discover/amd_linux.go], grep: 'amdgpu is not supported \\(supported types:%s\\)'}
    remedy: r
    workarounds: [hsa-override-9.0.6]
    examples: ['msg="amdgpu is not supported (supported types:[gfx1030])"']
"""


def write(tmp_path, text):
    path = tmp_path / "messages.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def loader(path):
    return load(
        path,
        layers={layer.id for layer in default_rules().layers},
        repos={"ollama", "ggml", "clr", "llama.cpp"},
        workarounds={w.id for w in default_workarounds()},
    )


def test_shipped_catalogue_loads_and_every_failure_has_layer_and_printer():
    catalogue = default_catalogue()
    assert len({m.id for m in catalogue.messages}) == len(catalogue.messages)
    for m in catalogue.messages:
        assert m.printed_by or m.not_available, m.id
        if m.is_failure:
            assert m.layer and m.remedy, m.id


def test_good_entry_loads(tmp_path):
    [message] = loader(write(tmp_path, GOOD)).messages
    assert message.printed_in("ollama", "0.12.3") == (True, "")
    assert message.printed_in("ollama", "0.17.5")[0] is False


@pytest.mark.parametrize(
    "change, error",
    [
        (("kind: failure\n", "kind: sometimes\n"), "messages.yaml:4: messages/0/kind"),
        (("    remedy: r\n", ""), "messages.yaml:2: messages/0: 'remedy' is a required property"),
        (("layer: discovery", "layer: nowhere"), "unknown layer 'nowhere'"),
        (("[hsa-override-9.0.6]", "[no-such-workaround]"), "unknown workaround 'no-such-workaround'"),
        (("repo: ollama,", "repo: elsewhere,"), "unknown repo 'elsewhere'"),
        (("(?P<supported>[^)]*)", "(?P<supported>[^)]*)(a)\\1"), "pattern is not valid RE2"),
        (("(?P<supported>[^)]*)", "(?=x)"), "pattern is not valid RE2"),
        (("[gfx1030])", "[gfx1030]"), "example does not match the pattern"),
        (("'<0.12.4'", "'about 12'"), "bad version range"),
    ],
)
def test_bad_entries_fail_with_file_and_line(tmp_path, change, error):
    old, new = change
    assert old in GOOD
    with pytest.raises(RuleError) as info:
        loader(write(tmp_path, GOOD.replace(old, new)))
    assert error in str(info.value)
    assert "messages.yaml:" in str(info.value)


def test_counterexample_that_matches_is_refused(tmp_path):
    text = GOOD + "    counterexamples: ['amdgpu is not supported (supported types:x)']\n"
    with pytest.raises(RuleError, match="counter-example matches"):
        loader(write(tmp_path, text))


def ollama_tree(message: str | None) -> dict[str, str | None]:
    body = (
        ""
        if message is None
        else f'\t\treason := fmt.Sprintf("{message}", supported)\n\t\tslog.Warn(reason, "gpu_type", gfx)\n'
    )
    return {
        "discover/amd_linux.go": f"package discover\n\nfunc check() {{\n{body}}}\n",
        "server/routes.go": 'package server\n\nfunc serve() {\n\tslog.Info(fmt.Sprintf("Listening on %s (version %s)", ln.Addr(), version.Version))\n}\n',
    }


@pytest.fixture
def ollama_repo(tmp_path, monkeypatch):
    """v0.12.3 prints the message; v0.12.4 dropped it (as the real ollama did); v0.11.0 lost it too early."""
    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        ollama_tree("amdgpu is not supported (supported types:%s)"),
        "print",
        tag="v0.12.3",
        date="2025-01-01T00:00:00",
    )
    commit_tree(repo, ollama_tree(None), "drop", tag="v0.12.4", date="2025-01-02T00:00:00")
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(tmp_path / "ollama"))
    return tmp_path / "ollama"


def check(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main(["messages", "--format", "json", "--offline", *args])
    out, err = capsys.readouterr()
    return info.value.code, {m["id"]: m for m in json.loads(out)["messages"]}


def test_messages_check_live_retired_and_located(ollama_repo, capsys):
    code, found = check(capsys, "--ref", "ollama=v0.12.3")
    assert code == 0
    assert found["ollama-amdgpu-not-supported"]["state"] == "live"
    assert found["ollama-amdgpu-not-supported"]["summary"] == "printed at ollama@v0.12.3:discover/amd_linux.go:4"
    assert found["ollama-listening"]["summary"] == "printed at ollama@v0.12.3:server/routes.go:4"
    assert found["rocblas-tensile-missing"]["state"] == "not-available"
    code, found = check(capsys, "--ref", "ollama=v0.12.4")
    assert found["ollama-amdgpu-not-supported"]["state"] == "retired"


def test_messages_check_reports_stale(ollama_repo, capsys, tmp_path):
    # the catalogue says server/routes.go prints the version line at every version; a tag without it is stale
    repo = new_repo(tmp_path / "ollama2")
    commit_tree(repo, {"server/routes.go": "package server\n"}, "gone", tag="v0.17.5")
    code, found = check(
        capsys, "--source", f"ollama={tmp_path / 'ollama2'}", "--ref", "ollama=v0.17.5", "--fail-on-stale"
    )
    assert code == 1
    assert found["ollama-listening"]["state"] == "stale"
    assert "stale at ollama@v0.17.5" in found["ollama-listening"]["summary"]


def test_diagnose_links_the_printing_line_at_the_logs_version(ollama_repo, tmp_path, capsys):
    from tests.diagnose import logs

    log = tmp_path / "s.log"
    log.write_text("\n".join(logs.ollama_0_12_3()) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["diagnose", "--format", "json", str(log)])
    data = json.loads(capsys.readouterr().out)
    finding = next(f for f in data["logs"][0]["findings"] if f["message"] == "ollama-amdgpu-not-supported")
    assert finding["printed_at"] == ["ollama@v0.12.3:discover/amd_linux.go:4"]
    # the log says source=amd_linux.go:380; the fixture's line is 4: the report says they differ
    assert any("differs from the located line" in c for c in finding["context"])
    textwrap.dedent("")


def _fields(catalogue):
    return [{k: v for k, v in vars(m).items() if k != "regex"} | {"regex": m.regex.pattern} for m in catalogue.messages]


def test_the_cached_catalogue_is_the_checked_one_and_a_checked_file_change_checks_again(tmp_path, monkeypatch):
    """default_catalogue's start-up cache (diagnose.catalogue._checked): the second process-start (caches cleared)
    takes the entries and the workarounds' facts from the rules cache without loading the pins, layers or
    workarounds, and gets the same catalogue as the full load; a change in a file the catalogue is checked against
    (here: a layer removed) is a new key, so the checks run again and fail."""
    import shutil
    import sys

    from gfxgate import datacache, resources
    from gfxgate.diagnose import catalogue as cat
    from gfxgate.gate import ruleset, workarounds as wk

    def fresh():
        for f in (
            cat.default_catalogue,
            cat.default_workaround_records,
            cat._checked,
            wk.default_workarounds,
            ruleset.layer_ids,
        ):
            f.cache_clear()
        datacache.reset()

    fresh()
    first = cat.default_catalogue()
    facts = cat.default_workaround_records()
    assert all(type(f) is wk.Workaround for f in facts)  # the records themselves, no hand-kept copy (issue 36)
    assert [w.to_json() for w in wk.default_workarounds()] == [f.to_json() for f in facts]
    assert [(w.override, w.exists_in.describe() if w.exists_in else None) for w in wk.default_workarounds()] == [
        (f.override, f.exists_in.describe() if f.exists_in else None) for f in facts
    ]
    # exists_in is carried (remedy.keep_existing leaves out a workaround the log's release does not have)
    assert any(f.exists_in is not None for f in facts)
    assert all(
        f.exists_at({"ollama": "v0.0.1"}.get) == w.exists_at({"ollama": "v0.0.1"}.get)
        for f, w in zip(facts, wk.default_workarounds())
    )
    fresh()
    (again, again_facts), calls = checks_called(
        monkeypatch, lambda: (cat.default_catalogue(), cat.default_workaround_records())
    )
    assert calls == [] and again_facts == facts
    assert _fields(again) == _fields(first) and all(m.search(e) is not None for m in again.messages for e in m.examples)

    rules = tmp_path / "rules"
    shutil.copytree(resources.rules_dir(), rules)
    layers = rules / "layers.yaml"
    text = layers.read_text(encoding="utf-8")
    assert "- id: discovery" in text
    layers.write_text(text.replace("- id: discovery", "- id: discovery-renamed"), encoding="utf-8")
    from gfxgate import targets

    with monkeypatch.context() as patch:
        for module in [m for name, m in sys.modules.items() if name.startswith("gfxgate") and hasattr(m, "rules_dir")]:
            patch.setattr(module, "rules_dir", lambda: rules)  # every loader reads the copy
        patch.setattr(datacache, "is_shipped", lambda path: True)  # the copy is cached like the shipped files
        targets.catalog.cache_clear()
        fresh()
        with pytest.raises(RuleError, match="unknown layer 'discovery'"):
            cat.default_catalogue()
    targets.catalog.cache_clear()
    fresh()
