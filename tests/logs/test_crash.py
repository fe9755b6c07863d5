"""Crash signatures and failure phases from log excerpts written like real Ollama/Go/ggml logs."""

from __future__ import annotations

from gfxgate.logs.crash import classify_phase, frame_name, parse_crash
from tests.sweep.ollama_server import State, Behaviour, load_crash_lines, load_lines, segv_lines, started_line

ERROR = "llama runner process has terminated: exit status 2"


def compute_crash_log() -> list[str]:
    state = State(Behaviour())
    return (
        ['[GIN] 2026/12/02 - 13:00:00 | 200 | 1.0s | 127.0.0.1 | GET "/api/ps"']
        + load_lines(state, 1)
        + [started_line()]
        + segv_lines(state)
    )


def test_go_crash_report_gives_signal_exit_status_and_compute_frames():
    lines = compute_crash_log()
    crash = parse_crash(lines, ERROR)
    assert crash.signals == ("SIGSEGV",)
    assert crash.exit_status == 2 and crash.terminated
    assert crash.key_frames[0] == "ggml_backend_sched_graph_compute_async"
    assert "computeBatch" in crash.key_frames
    assert crash.label == "SIGSEGV"
    assert lines[crash.first_line].startswith("SIGSEGV")
    # the excerpt starts at the runner-start marker and keeps the frames and the termination line
    assert "llama runner started" in crash.excerpt[0]
    assert any("computeBatch" in line for line in crash.excerpt)
    assert "exit status 2" in crash.excerpt[-1]


def test_crash_after_runner_started_is_compute_phase_citing_the_log_line():
    lines = compute_crash_log()
    crash = parse_crash(lines, ERROR)
    phase = classify_phase("crash", lines, crash, ERROR, first_line_no=101)
    started = next(i for i, line in enumerate(lines) if "llama runner started" in line)
    assert phase.phase == "compute"
    assert f"log line {started + 101}" in phase.reason
    assert "ggml_backend_sched_graph_compute_async" in phase.reason and "SIGSEGV" in phase.reason


def test_crash_while_loading_is_load_phase():
    lines = load_lines(State(Behaviour()), 2) + load_crash_lines()
    crash = parse_crash(lines, ERROR)
    phase = classify_phase("crash", lines, crash, ERROR)
    assert crash.signals == ("SIGABRT",)
    assert "loadModel" in crash.key_frames
    assert phase.phase == "load" and "before 'llama runner started'" in phase.reason


def test_c_backtrace_frames_without_start_marker_are_compute():
    lines = [
        "ggml/src/ggml-vulkan/ggml-vulkan.cpp:5071: GGML_ASSERT(buf != nullptr) failed",
        "/usr/lib/ollama/libggml-base.so(+0x1a2b6)[0x7f1c5d41a2b6]",
        "/usr/lib/ollama/libggml-base.so(ggml_abort+0x15e)[0x7f1c5d41a6ae]",
        "/usr/lib/ollama/libggml-vulkan.so(+0x8d2c1)[0x7f1c4e08d2c1]",
        "/usr/lib/ollama/libggml-base.so(ggml_backend_sched_graph_compute_async+0x4b2)[0x7f1c5d42f0a2]",
        "#5  0x00007f1c5d42f0a2 in llama_decode (ctx=0x55d1, batch=...) at src/llama-context.cpp:1021",
        "SIGABRT: abort",
    ]
    crash = parse_crash(lines)
    assert crash.key_frames[:2] == ("ggml_backend_sched_graph_compute_async", "llama_decode")
    assert classify_phase("crash", lines, crash).phase == "compute"


def test_frame_name_of_a_mangled_name_with_a_digit_that_is_not_ascii():
    """str.isdigit() says yes to "²", the length regex (\\d) does not: the demangler indexed a failed match and
    `gfxgate diagnose` on a log with such a frame ended in an internal error (TypeError)."""
    assert frame_name("/usr/lib/ollama/libggml-hip.so(_Z\u00b2x+0x10) [0x7f00]") == "_Z\u00b2x"
    assert frame_name("/usr/lib/libllama.so(_ZN13llama_contextC1E+0x10) [0x7f00]") == "llama_context"


def test_frame_name_on_go_and_c_frames_and_non_frames():
    assert (
        frame_name("github.com/ollama/ollama/runner/ollamarunner.(*Server).computeBatch(0xc0, {...})") == "computeBatch"
    )
    assert frame_name(
        "github.com/ollama/ollama/ml/backend/ggml._Cfunc_ggml_backend_sched_graph_compute_async(0x7f)"
    ) == ("ggml_backend_sched_graph_compute_async")
    assert frame_name("#3  0x00007f in ggml_graph_compute (cgraph=0x1)") == "ggml_graph_compute"
    assert frame_name('time=2026-12-02T13:00:00Z level=INFO source=server.go:1 msg="x"') is None


def test_healthy_log_has_no_crash_and_other_phases():
    lines = load_lines(State(Behaviour()), 1) + [started_line()]
    crash = parse_crash(lines)
    assert not crash.found and crash.excerpt == ()
    assert classify_phase("ok", lines, crash).phase == "none"
    assert classify_phase("timeout", lines, crash).phase == "timeout"
    assert "after the runner started" in classify_phase("timeout", lines, crash).reason
    assert classify_phase("connection-error", [], crash, "connection refused").phase == "transport"


def test_terminated_without_log_is_unknown_and_says_how_to_locate_it():
    crash = parse_crash([], ERROR)
    assert crash.found and crash.signals == () and crash.label == "exit status 2"
    phase = classify_phase("crash", [], crash, ERROR)
    assert phase.phase == "unknown" and "--server-log" in phase.reason
