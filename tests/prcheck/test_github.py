"""The GitHub workflow and the composite action: schema-valid, least privilege, pinned, and self-tested.

The action's check step is run here the way the runner runs it (bash -eo pipefail on the step's
script, inputs only through its `env:`), against a project repository and the synthetic upstream.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import git
import jsonschema
import pytest
import yaml

from tests.prcheck.golden import REPO
from tests.prcheck.test_sarif import validate as validate_sarif

DATA = Path(__file__).resolve().parent / "data"
WORKFLOW = REPO / ".github" / "workflows" / "gfxgate.yml"
ACTION = REPO / "action.yml"
SHA_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def steps(doc: dict) -> list[dict]:
    if "runs" in doc:
        return doc["runs"]["steps"]
    return [step for job in doc["jobs"].values() for step in job.get("steps", [])]


@pytest.mark.parametrize("path,schema", [(WORKFLOW, "github-workflows.json"), (ACTION, "github-actions.json")])
def test_files_are_valid_against_their_schemas(path, schema):
    doc = load(path)
    errors = list(jsonschema.Draft7Validator(json.loads((DATA / schema).read_text(encoding="utf-8"))).iter_errors(doc))
    assert not errors, [e.message for e in errors]
    broken = dict(doc)
    broken["bogus-key"] = 1  # the schema really constrains the file
    assert list(jsonschema.Draft7Validator(json.loads((DATA / schema).read_text(encoding="utf-8"))).iter_errors(broken))


@pytest.mark.parametrize("path", [WORKFLOW, ACTION])
def test_actions_pinned_by_sha_and_inputs_never_pasted_into_shell(path):
    doc = load(path)
    raw = path.read_text(encoding="utf-8")
    for step in steps(doc):
        if "uses" in step:
            assert step["uses"] == "./" or SHA_PIN.match(step["uses"]), step["uses"]
            if step["uses"] != "./":
                assert re.search(re.escape(step["uses"]) + r" # v\d", raw), f"{step['uses']}: no version comment"
        if "run" in step:
            assert "${{" not in step["run"], f"expression pasted into a shell script: {step['run']}"
        if "actions/checkout@" in step.get("uses", ""):
            assert step["with"]["persist-credentials"] is False


def test_workflow_permissions_and_triggers():
    doc = load(WORKFLOW)
    assert doc["permissions"] == {"contents": "read"}
    assert "push" in doc["on"] and "rules/**" in doc["on"]["pull_request"]["paths"]
    check = doc["jobs"]["check"]
    assert check["permissions"] == {"contents": "read", "security-events": "write"}
    assert check["steps"][0]["with"]["fetch-depth"] == 0
    action_step = next(s for s in check["steps"] if s.get("uses") == "./")
    upload = next(s for s in check["steps"] if "upload-sarif" in s.get("uses", ""))
    assert "always()" in upload["if"] and action_step["id"] in upload["with"]["sarif_file"]
    test = doc["jobs"]["test"]
    assert "bash .ci/run" in test["steps"][-1]["run"]  # the project's CI script, which runs the README's test command
    # every Python version pyproject.toml claims (requires-python >=3.10) is in the matrix
    import tomllib

    from tests.conftest import CHECKOUT

    floor = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert floor == ">=3.10"
    assert {"3.10", "3.11", "3.12", "3.13"} <= set(test["strategy"]["matrix"]["python-version"])
    assert "permissions" not in doc["jobs"]["test"]  # inherits contents: read


def test_action_inputs_reach_the_script_only_through_env():
    doc = load(ACTION)
    assert doc["runs"]["using"] == "composite"
    assert set(doc["inputs"]) >= {"targets", "fail-on", "pins-file"}
    check = next(s for s in doc["runs"]["steps"] if s.get("id") == "check")
    env_text = json.dumps(check["env"])
    for name in ("targets", "fail-on", "pins-file", "rules-dir", "base-ref"):
        assert f"inputs.{name}" in env_text
    assert "gfxgate check" in check["run"] and "$GITHUB_STEP_SUMMARY" in check["run"]


# -- self-test: run the action's check step as the runner would ------------------------------------------
def evaluate(expression: str, context: dict) -> str:
    """The `${{ a.b || c.d }}` expressions the action uses: dotted lookups joined by ||."""

    def lookup(path: str):
        value = context
        for part in path.strip().split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return value

    def replace(match):
        for operand in match.group(1).split("||"):
            value = lookup(operand)
            if value:
                return str(value)
        return ""

    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", replace, expression)


def run_check_step(project: Path, tmp_path: Path, src_env: dict, inputs: dict) -> tuple[int, str, str, Path]:
    doc = load(ACTION)
    defaults = {name: spec.get("default", "") for name, spec in doc["inputs"].items()}
    base = git.Repo(project).head.commit.hexsha
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(parents=True)
    context = {
        "inputs": {**defaults, **inputs},
        "github": {"action_path": str(REPO), "event": {"pull_request": {"base": {"sha": base}}}},
        "runner": {"temp": str(runner_temp)},
    }
    check = next(s for s in doc["runs"]["steps"] if s.get("id") == "check")
    shim_dir = tmp_path / "bin"  # `gfxgate` on PATH = this checkout, as `pip install $GITHUB_ACTION_PATH` would give
    shim_dir.mkdir()
    shim = shim_dir / "gfxgate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gfxgate "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "step.sh"
    script.write_text(check["run"])
    output, summary = tmp_path / "github-output", tmp_path / "step-summary.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GFXGATE_", "GITHUB_"))}
    env.update(src_env)
    env.update({name: evaluate(str(value), context) for name, value in check["env"].items()})
    env.update(
        {
            "PATH": f"{shim_dir}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(REPO),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ACTION_PATH": str(REPO),
        }
    )
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
    return done.returncode, done.stderr, json.dumps(outputs), summary


def bump(project: Path, src_env: dict, tag: str) -> None:
    from tests.prcheck.golden import gfxgate

    pins = project / "rules" / "pins.toml"  # named: never the default's fallback, this checkout's own pins
    done = gfxgate(["pins", "bump", "ollama", tag, "--no-snapshot", "--pins", str(pins)], src_env, project)
    assert done.returncode == 0, done.stderr


def test_action_step_fails_on_a_regression_and_leaves_summary_and_sarif(project, tmp_path, src_env):
    bump(project, src_env, "v0.14.0")
    code, stderr, outputs, summary = run_check_step(
        project, tmp_path, src_env, {"targets": "gfx900,gfx1030", "fail-on": "gfx900"}
    )
    assert code == 1, stderr
    outputs = json.loads(outputs)
    assert Path(outputs["sarif-file"]).is_file() and Path(outputs["markdown-file"]).is_file()
    validate_sarif(json.loads(Path(outputs["sarif-file"]).read_text()))
    text = summary.read_text()
    assert "| gfx900 | Release packaging | **regression** | allowed | **blocked** |" in text
    assert Path(outputs["markdown-file"]).read_text() == text


def test_action_step_passes_without_fail_on_and_with_hostile_input(project, tmp_path, src_env):
    bump(project, src_env, "v0.14.0")
    code, stderr, outputs, summary = run_check_step(project, tmp_path, src_env, {"targets": "gfx900", "fail-on": ""})
    assert code == 0, stderr
    assert "**regression**" in summary.read_text()
    marker = tmp_path / "pwned"
    code, stderr, _, _ = run_check_step(
        project,
        tmp_path / "second",
        src_env,
        {"targets": f'gfx900"; touch {marker}; echo "', "fail-on": "$(touch " + str(marker) + ")"},
    )
    assert code == 2 and not marker.exists()  # an input is a value, never shell code
