"""Issue 44 item 1: diagnose reads Windows logs with Windows knowledge, through the installed script.

The lines are the printing code's at the tags that print them, in the forms users paste them:
- discover/amd.go:478-487 at v0.32.15 (detectOldAMDDriverWindows: "AMD driver is too old" when exec.LookPath finds
  amdhip64_6.dll and not amdhip64_7.dll; discover/runner.go at v0.30.0-rc0 … rc15);
- discover/amd_hip_windows.go:40 at v0.12.3, logged by amd_windows.go:34 (the same at :33 in ollama/ollama#6567's
  pasted log, v0.3.x): "unable to load amdhip64_6.dll, please make sure to upgrade to the latest amd driver";
- amd_windows.go's "amdgpu is not supported" with a Windows library path (likelovewant/ollama-for-amd#26, v0.3.14);
- rocBLAS's "Cannot read …TensileLibrary.dat … for GPU arch : gfx1031" under a Windows install path, and the runner
  exit code 3221226505 beside it (ollama/ollama#4070, v0.1.32);
- the runner's "exit status 0xc0000139" after a rocBLAS/hipBLAS DLL of another HIP SDK (likelovewant/ollama-for-amd
  #41), discovery's "llama-server --list-devices failed: exit status 0xc0000005" (discover/llama_server.go:150-154);
- ggml-backend-reg.cpp's "%s: failed to load %s: %s" with Windows' empty dl_error() (ggml-backend-dl.cpp:28).

On Windows HSA_OVERRIDE_GFX_VERSION has no effect (ollama/ollama#3107, ROCm/TheRock#1719): no Windows log's finding
offers it, a ROCr variable, a systemd drop-in or a Linux path (tests/diagnose/advice.py checks every diagnosis of the
suite for it), and the same lines in a Linux log still get their Linux remedy.
"""

from __future__ import annotations

from tests.diagnose.test_excerpts import conclusion, diagnose, finding

T = "2026-11-20T09:00:00.000+01:00"


def slog(level: str, source: str, msg: str, tail: str = "", time: str = T) -> str:
    return f'time={time} level={level} source={source} msg="{msg}"' + (f" {tail}" if tail else "")


def listen(version: str, time: str = T) -> str:
    return slog("INFO", "routes.go:1528", f"Listening on 127.0.0.1:11434 (version {version})", time=time)


def os_of(d: dict) -> str | None:
    return next((f["value"] for f in d["facts"] if f["name"] == "os"), None)


def test_amd_driver_too_old_on_windows_names_amdhip64_7(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            listen("0.32.15"),
            slog("WARN", "amd.go:485", "AMD driver is too old. Update your AMD driver to enable GPU inference."),
            slog(
                "INFO",
                "types.go:50",
                "inference compute",
                'id=cpu library=cpu compute="" name=cpu description=cpu libdirs=ollama '
                'driver="" pci_id="" type="" total="31.9 GiB" available="24.0 GiB"',
            ),
        ],
        newline="\r\n",
    )
    f = finding(d, "ollama-amd-driver-too-old-windows")
    assert os_of(d) == "windows" and f["vendor"] == "amd" and f["layer"] == "discovery" and f["stale"] is None
    assert "amdhip64_7.dll" in f["remedy"] and "amdhip64_6.dll" in f["remedy"] and "HSA_" not in f["remedy"]
    assert conclusion(d)[0][0] == "dropped-by-discovery"


def test_amdhip64_6_missing_as_pasted_in_ollama_6567(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            slog(
                "INFO",
                "routes.go:1172",
                "Listening on 127.0.0.1:11434 (version 0.3.8)",
                time="2024-08-30T09:43:00.500-05:00",
            ),
            'time=2024-08-30T09:43:00.852-05:00 level=DEBUG source=amd_windows.go:33 msg="unable to load amdhip64_6.dll, '
            'please make sure to upgrade to the latest amd driver: The specified module could not be found."',
        ],
    )
    f = finding(d, "ollama-amdhip-dll-missing")
    assert os_of(d) == "windows" and f["layer"] == "discovery" and "HIP 6 runtime" in f["remedy"]


def test_an_unsupported_gfx_target_on_windows_is_never_told_to_set_an_hsa_override(gfxgate_cli, tmp_path):
    line = (
        'time=2024-10-26T14:35:44.091+01:00 level=WARN source=amd_windows.go:138 msg="amdgpu is not supported '
        '(supported types:[gfx1030 gfx1100 gfx1101 gfx1102])" gpu_type=gfx1031 gpu=0 '
        r"library=C:\Users\user\AppData\Local\Programs\Ollama\lib\ollama"
    )
    d = diagnose(gfxgate_cli, tmp_path, [listen("0.3.14", "2024-10-26T14:35:43.500+01:00"), line])
    f = finding(d, "ollama-amdgpu-not-supported")
    assert os_of(d) == "windows" and f["vendor"] == "amd" and f["target"] == "gfx1031"
    assert "ollama/ollama#3107" in f["remedy"] and "ollama-for-amd" in f["remedy"]
    assert not [w for w in f["workarounds"] if w.startswith("hsa-override")]
    assert conclusion(d)[0][0] == "dropped-by-discovery"
    # the same line from Linux (its path) keeps the Linux remedy: the override is the Linux fix
    linux = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            listen("0.3.14", "2024-10-26T14:35:43.500+01:00"),
            line.replace("amd_windows.go", "amd_linux.go").split(" library=")[0] + " library=/usr/lib/ollama",
        ],
    )
    assert (
        os_of(linux) is None and "HSA_OVERRIDE_GFX_VERSION" in finding(linux, "ollama-amdgpu-not-supported")["remedy"]
    )


def test_rocblas_without_kernels_under_a_windows_path_as_in_ollama_4070(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            slog(
                "INFO",
                "routes.go:1123",
                "Listening on 127.0.0.1:11434 (version 0.1.32)",
                time="2024-05-02T00:53:10.000+08:00",
            ),
            r"rocBLAS error: Cannot read C:\Users\panda\AppData\Local\Programs\Ollama\rocm\/rocblas/library/TensileLibrary.dat: "
            "No such file or directory for GPU arch : gfx1031",
            'time=2024-05-02T00:53:17.960+08:00 level=ERROR source=routes.go:120 msg="error loading llama server" error="llama runner '
            r"process no longer running: 3221226505 error:Cannot read C:\\Users\\panda\\AppData\\Local\\Programs\\Ollama\\rocm\\/rocblas/"
            'library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031"',
        ],
    )
    f = finding(d, "rocblas-tensile-missing")
    assert os_of(d) == "windows" and f["target"] == "gfx1031" and "gfx1031" in f["remedy"]
    assert "rocblas\\library" in f["remedy"] and "copy-rocblas-tensile" not in f["workarounds"]


def test_windows_exit_statuses_say_what_they_mean(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            listen("0.5.4"),
            slog(
                "ERROR",
                "sched.go:455",
                "error loading llama server",
                'error="llama runner process has terminated: exit status 0xc0000139"',
            ),
            slog(
                "INFO",
                "runner.go:522",
                "failure during llama-server GPU discovery",
                r'OLLAMA_LIBRARY_PATH="[C:\\Users\\me\\AppData\\Local\\Programs\\Ollama\\lib\\ollama]" extra_envs=map[] '
                'error="llama-server --list-devices failed: exit status 0xc0000005" detail=""',
            ),
        ],
    )
    assert os_of(d) == "windows"
    notes = [line for f in d["findings"] for line in f["context"]]
    assert any("STATUS_ENTRYPOINT_NOT_FOUND" in n and "rocblas.dll" in n for n in notes), notes
    assert any("access violation" in n for n in notes), notes


def test_a_hip_backend_dll_that_does_not_load_names_its_dlls(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            "build: 10400 (1f368f354) with Clang 20.1.8 for Windows x86_64",
            r"load_backend: failed to load E:\pack\ggml-hip.dll: ",
            "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
        ],
    )
    f = finding(d, "ggml-backend-load-failed")
    assert os_of(d) == "windows" and f["vendor"] == "amd" and f["layer"] == "runtime"
    assert "amdhip64_7.dll" in f["remedy"] and "hipblas.dll" in f["remedy"] and f["verdict"] is None


def test_an_override_set_on_windows_is_said_to_have_no_effect(gfxgate_cli, tmp_path):
    """ollama/ollama#3107: v0.1.29 on Windows with HSA_OVERRIDE_GFX_VERSION set, the gfx900 still rejected."""
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            slog(
                "INFO",
                "routes.go:1110",
                "Listening on 127.0.0.1:11434 (version 0.1.29)",
                time="2024-03-15T15:31:54.278+11:00",
            ),
            'time=2024-03-15T15:31:55.000+11:00 level=DEBUG source=amd_windows.go:80 msg="skipping rocm gfx compatibility check with '
            'HSA_OVERRIDE_GFX_VERSION=9.0.0"',
            'time=2024-03-15T15:31:55.100+11:00 level=WARN source=amd_windows.go:96 msg="amdgpu [0] gfx900 is not supported by '
            r'C:\\Users\\Admin\\AppData\\Local\\Temp\\ollama2659182147\\runners\\rocm_v5.7 [gfx1030 gfx1100 gfx1101 gfx1102 gfx906]"',
        ],
    )
    assert os_of(d) == "windows"
    f = finding(d, "ollama-amdgpu-not-supported-v0129")
    assert any("no effect on Windows" in line for line in f["context"]), f["context"]
    assert not any("in effect: the ROCm runtime reports" in line for line in f["context"])


def test_the_windows_look_is_counted_work_bounded_by_the_catalogue_not_the_log(monkeypatch):
    """A crash loop of 1,000 runs: diagnose looks at no more than WINDOWS_LOOKS lines of each message for Windows words
    (counted, not timed), and still finds the Windows line of a log that has one."""
    import io

    import gfxgate.diagnose.analyse as analyse
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from tests.diagnose.test_bounded import _crash_loop

    calls: list[str] = []
    real = analyse.shows_windows
    monkeypatch.setattr(analyse, "shows_windows", lambda mid, text: calls.append(mid) or real(mid, text))
    d = analyse.diagnose_log(read_stream("loop", io.BytesIO(_crash_loop(1_000).encode())), default_catalogue())
    assert d.recognised > 5_000 and os_of({"facts": [{"name": f.name, "value": f.value} for f in d.facts]}) is None
    assert len(calls) <= analyse.WINDOWS_LOOKS * len({c for c in calls}) and len(calls) < 100, len(calls)
    windows = (
        _crash_loop(3)
        + "load_backend: failed to load C:\\Users\\me\\AppData\\Local\\Programs\\Ollama\\lib\\ollama\\ggml-hip.dll: \n"
    )
    d = analyse.diagnose_log(read_stream("w", io.BytesIO(windows.encode())), default_catalogue())
    assert any(f.name == "os" and f.value == "windows" for f in d.facts)
