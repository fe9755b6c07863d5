"""Worklog lines of the wrong shape, field by field and nested field by nested field (offload, overhead,
overhead.server_exit, ps_after.models, crash, evidence, …): each is an InputError naming its line and field
(exit 6 on the command line), never a traceback in `sweep report` or `scan --runtime` (issue 13).

The records are real: written by `gfxgate sweep` (run in process, tests/inprocess.py: the claim is about what the
readers make of the lines, not about the console script) sweeping a llama-server peer on 127.0.0.1
(tests/sweep/slow_llama_server.py: one that answers, one that never does) and an Ollama-shaped server
(tests/sweep/test_sweep_faults.py: a healthy answer, a 200 carrying an error); one cell each, one record of each kind.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from gfxgate.errors import InputError

PEER = Path(__file__).with_name("slow_llama_server.py")
DELETE = object()
WRONG = (DELETE, None, "x", -2, 1.5, True, [], {}, [{}])


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict]:
    from tests.inprocess import gfxgate
    from tests.sweep.test_sweep_faults import Hostile

    folder = tmp_path_factory.mktemp("typed-worklog")
    worklog = folder / "w.jsonl"
    model = folder / "m.gguf"
    model.write_bytes(b"GGUF")
    common = ["--num-gpu", "0", "--timeout", "1", "--no-probe-gpu", "--progress", "none", "--worklog", str(worklog)]
    for mode in ("answer", "silent"):
        command = shlex.join([sys.executable, str(PEER), mode])
        done = gfxgate("sweep", "--llama-server", f"{mode}={command}", "--model-file", str(model), *common)
        assert done.returncode == 0, done.stderr
    for mode in ("healthy", "error-200"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Hostile,), {"mode": mode}))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}"
            done = gfxgate("sweep", "--endpoint", f"o-{mode}={url}", "--model", "m", *common)
        finally:
            server.shutdown()
            server.server_close()
        assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in worklog.read_text().splitlines()]
    outcomes = {(r["endpoint"].get("kind", "ollama"), r["outcome"]) for r in lines}
    assert outcomes == {("llama-server", "ok"), ("llama-server", "timeout"), ("ollama", "ok"), ("ollama", "crash")}
    return lines


def _paths(value, prefix=()):
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*prefix, 0))


def _mutated(record: dict, path: tuple, value) -> dict:
    out = json.loads(json.dumps(record))  # a deep copy of JSON data, 3x cheaper than copy.deepcopy
    inner = out
    for key in path[:-1]:
        inner = inner[key]
    if value is DELETE:
        del inner[path[-1]]
    else:
        inner[path[-1]] = value
    return out


def test_every_field_of_the_wrong_type_or_missing_is_an_input_error_or_read(records, tmp_path):
    """Every field path of the four kinds of record × 9 wrong values (or the field removed): the worklog is
    rejected with an InputError, or read, reported (md and json) and turned into runtime verdicts."""
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render
    from gfxgate.sweep.verdicts import runtime_verdicts
    from gfxgate.sweep.worklog import read_worklog
    from gfxgate.targets import catalog

    picked = {}
    for record in records:  # one record per (kind, outcome)
        picked.setdefault((record["endpoint"].get("kind", "ollama"), record["outcome"]), record)
    targets = [catalog().parse("gfx900")]
    worklog = tmp_path / "w.jsonl"
    cases = rejected = 0
    nested = set()
    texts = [json.dumps(line) + "\n" for line in picked.values()]  # the lines left as they are, written once
    for index, record in enumerate(picked.values()):
        for path in _paths(record):
            if len(path) > 1:
                nested.add(path[0])
            for value in WRONG:
                lines = list(texts)
                lines[index] = json.dumps(_mutated(record, path, value)) + "\n"
                # a new file each case: ext4 flushes a file truncated and written again on close (auto_da_alloc),
                # 7 ms a case here, most of this test's wall time
                worklog.unlink(missing_ok=True)
                worklog.write_text("".join(lines))
                cases += 1
                try:
                    log = read_worklog(worklog)
                    report = build_report(log)
                    render(report, "md")
                    render(report, "json")
                    runtime_verdicts(worklog, targets)
                except InputError as exc:
                    assert f"{worklog}:{index + 1}: " in exc.message, exc.message  # names the line
                    rejected += 1
                except Exception as exc:  # noqa: BLE001 - the point of the test
                    raise AssertionError(
                        f"{'/'.join(map(str, path))} = {value!r}: {type(exc).__name__}: {exc}"
                    ) from exc
    assert {"offload", "overhead", "ps_after", "crash", "evidence", "options", "endpoint", "phase"} <= nested
    assert cases > 1000 and rejected > cases // 2, (cases, rejected)


def test_the_fast_schema_check_says_what_jsonschema_says(records):
    """The reader's schema check (per-field predicates compiled from the schema, jsonschema for the message) gives
    the problem the whole-schema jsonschema validation gives (its errors sorted by path, the first), or none where
    it finds none: every field path of the four kinds of record, each with one of the wrong values in turn (all of
    them over the paths), and each record as written."""
    from gfxgate.sweep import worklog

    validator = worklog._line_validator()

    def reference(record: dict) -> str | None:
        errors = sorted(validator.iter_errors(record), key=lambda e: list(map(str, e.absolute_path)))
        if not errors:
            return None
        where = "/".join(map(str, errors[0].absolute_path)) or "(the record)"
        return f"{where}: {' '.join(errors[0].message.split())[:200]}"

    cases = problems = 0
    for record in records:
        assert worklog._schema_problem(record) is None is reference(record)
        for number, path in enumerate(_paths(record)):
            value = WRONG[number % len(WRONG)]
            mutated = _mutated(record, path, value)
            expected = reference(mutated)
            assert worklog._schema_problem(mutated) == expected, ("/".join(map(str, path)), value)
            cases += 1
            problems += expected is not None
    assert cases > 200 and cases > problems > cases // 3, (cases, problems)


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("overhead", "server_exit", "returncode"), "x", "overhead/server_exit/returncode"),
        (("overhead", "server_exit"), [], "overhead/server_exit"),
        (("offload", "layers"), "2", "offload/layers"),
        (("offload", "devices"), [1], "offload/devices/0"),
        (("ps_after", "models"), [{"model": 1, "size": 1, "size_vram": 1}], "ps_after/models/0/model"),
        (("timeout_s",), None, "timeout_s"),
    ],
)
def test_nested_field_of_the_wrong_type_is_one_line_exit_6(records, gfxgate_cli, tmp_path, path, value, field):
    llama = next(r for r in records if r["endpoint"].get("kind") == "llama-server" and r["outcome"] == "ok")
    worklog = tmp_path / "w.jsonl"
    worklog.write_text(json.dumps(_mutated(llama, path, value)) + "\n")
    for args in (["sweep", "report", str(worklog)], ["scan", "--target", "gfx900", "--runtime", str(worklog)]):
        done = gfxgate_cli(*args, timeout=60)
        assert done.returncode == 6, (args, done.stderr)
        first, *rest = done.stderr.strip().splitlines()
        assert first.startswith(f"gfxgate: error: {worklog}:1: {field}: "), done.stderr
        assert "Traceback" not in done.stderr and all(line.startswith("  hint:") for line in rest), done.stderr
