"""The worklog: durable appends, a torn last line tolerated, garbage rejected with its line number."""

from __future__ import annotations

import json

import pytest

from gfxgate.errors import InputError
from gfxgate.sweep.worklog import KIND, SCHEMA_VERSION, WorklogWriter, cell_key, read_worklog


def record(n: int, outcome: str = "ok") -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "run_id": f"r{n}",
        "cell": cell_key("rocm", "m", n, 0),
        "endpoint": {"name": "rocm", "url": "http://127.0.0.1:1"},
        "model": "m",
        "options": {"num_gpu": n},
        "outcome": outcome,
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "ended_at": "2026-01-01T00:00:01.000+00:00",
    }


def test_append_and_read_back_with_line_numbers(tmp_path):
    path = tmp_path / "w.jsonl"
    with WorklogWriter(path) as writer:
        for n in range(3):
            writer.append(record(n))
    log = read_worklog(path)
    assert [r.run_id for r in log.runs] == ["r0", "r1", "r2"]
    assert [r.line for r in log.runs] == [1, 2, 3]
    assert log.finished_cells() == {cell_key("rocm", "m", n, 0) for n in range(3)}
    assert all(line.endswith("}") for line in path.read_text().splitlines())
    assert log.warnings == ()


def test_torn_last_line_is_ignored_then_set_aside_before_appending(tmp_path):
    path = tmp_path / "w.jsonl"
    with WorklogWriter(path) as writer:
        writer.append(record(0))
    fragment = json.dumps(record(1))[:37]
    with open(path, "a") as handle:
        handle.write(fragment)  # what a kill during a write leaves
    log = read_worklog(path)
    assert [r.run_id for r in log.runs] == ["r0"]
    assert len(log.warnings) == 1 and "torn last line" in log.warnings[0] and ":2:" in log.warnings[0]

    with WorklogWriter(path) as writer:
        writer.append(record(1))
    log = read_worklog(path)
    assert [r.run_id for r in log.runs] == ["r0", "r1"]
    assert log.warnings == ()
    assert (tmp_path / "w.jsonl.torn").read_text() == fragment + "\n"  # nothing written is lost


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(record(0)) + "\n" + json.dumps(record(1)))
    assert [r.run_id for r in read_worklog(path).runs] == ["r0", "r1"]


@pytest.mark.parametrize(
    "bad, message",
    [
        ("this is not json", "not a worklog line"),
        (json.dumps({"kind": "something-else"}), "not a gfxgate sweep run"),
        (json.dumps({**record(9), "schema_version": 99}), "schema_version 99"),
        (json.dumps({**record(9), "outcome": "maybe"}), "unknown outcome"),
        (json.dumps({k: v for k, v in record(9).items() if k != "run_id"}), "lacks run_id"),
    ],
)
def test_garbage_in_the_middle_is_an_input_error_naming_the_line(tmp_path, bad, message):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(record(0)) + "\n" + bad + "\n" + json.dumps(record(1)) + "\n")
    before = path.read_bytes()
    with pytest.raises(InputError) as err:
        read_worklog(path)
    assert f"{path}:2:" in str(err.value) and message in str(err.value)
    assert err.value.exit_code == 6
    assert path.read_bytes() == before


def test_missing_worklog(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_worklog(tmp_path / "nope.jsonl")
    assert read_worklog(tmp_path / "nope.jsonl", missing_ok=True).runs == ()


def test_second_writer_on_the_same_worklog_is_refused(tmp_path):
    path = tmp_path / "w.jsonl"
    with WorklogWriter(path) as writer:
        writer.append(record(0))
        with pytest.raises(InputError, match="in use by another"):
            WorklogWriter(path)
    with WorklogWriter(path) as again:  # the lock goes with the writer
        again.append(record(1))
    assert [r.run_id for r in read_worklog(path).runs] == ["r0", "r1"]


def test_each_distinct_line_is_checked_against_the_schema_once(tmp_path, monkeypatch):
    """Reading a worklog again checks no line again (counted), a changed line is checked, and a line found wrong
    is wrong again on every read, with the same message and its own line number."""
    from gfxgate.sweep import worklog

    checked = []
    real = worklog._schema_problem
    monkeypatch.setattr(worklog, "_schema_problem", lambda record: checked.append(record["run_id"]) or real(record))
    monkeypatch.setattr(worklog, "_CHECKED", {})
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(record(n)) + "\n" for n in range(3)))
    for _ in range(3):
        assert [r.run_id for r in read_worklog(path).runs] == ["r0", "r1", "r2"]
    assert checked == ["r0", "r1", "r2"]
    bad = {**record(3), "started_at": 5}
    for line in (2, 3):  # the same bad bytes at another line: its own line number, the cached problem
        lines = [json.dumps(record(n)) for n in range(3)]
        lines.insert(line - 1, json.dumps(bad))
        path.write_text("".join(text + "\n" for text in lines))
        with pytest.raises(InputError, match=rf"w\.jsonl:{line}: started_at: 5 is not of type 'string'"):
            read_worklog(path)
    assert checked == ["r0", "r1", "r2", "r3"]
