"""Which OS wrote a log, and what a Windows log may be advised (issue 44 item 1): the one place diagnose decides it.

A log shows Windows by its own recognised lines: Ollama's Windows discovery sources (``source=amd_windows.go``,
``amd_hip_windows.go``, ``gpu_windows.go``), Windows paths (``C:\\Users\\…\\AppData\\Local\\Programs\\Ollama``,
slog's doubled backslashes too), DLL and EXE names, an NTSTATUS exit code (``exit status 0xc0000005``). Nothing
else marks a log as Linux's, so a log without these is read as before (Linux).

On Windows the ROCm runtime does not go through HSA: ``HSA_OVERRIDE_GFX_VERSION`` has no effect there
(ollama/ollama#3107; ROCm/TheRock#1719: "Windows does not go through HSA"; llama.cpp's build.md since #21331),
nor have ``HSA_ENABLE_SDMA`` and ``ROCR_VISIBLE_DEVICES``, and a systemd drop-in or ``/opt/rocm`` path means nothing.
A Windows log's finding never gets the workarounds of :data:`LINUX_ONLY`, nor a remedy with :data:`LINUX_WORDS`
(the catalogue's ``os_remedies: {windows: …}`` replaces it, else a neutral sentence and a note).
"""

from __future__ import annotations

from gfxgate.lazyre import lazy_compile

WINDOWS = "windows"
# rules/workarounds.yaml entries that act only on Linux: ROCr/HSA variables, Linux install paths
LINUX_ONLY = frozenset(
    {
        "hsa-override-9.0.0",
        "hsa-override-9.0.6",
        "hsa-override-10.3.0",
        "hsa-override-11.0.0",
        "hsa-enable-sdma-0",
        "rocr-visible-devices",
        "copy-rocblas-tensile",
    }
)
# words of a remedy that only make sense on Linux
LINUX_WORDS = lazy_compile(
    r"HSA_|ROCR_VISIBLE|systemd|systemctl|drop-in|journalctl|/etc/|/usr/|/opt/rocm|/dev/kfd|\bldd\b|"
    r"render/video|libggml-hip\.so|\.so\b"
)
OVERRIDE_NOTE = (
    "HSA_OVERRIDE_GFX_VERSION has no effect on Windows (ollama/ollama#3107): ROCm on Windows does not go "
    "through HSA, so no override maps this GPU to another target there"
)
_WINDOWS = lazy_compile(
    r"source=(?:amd_windows|amd_hip_windows|gpu_windows|rocm_windows|cpu_windows)\.go:|"
    r"\b[A-Za-z]:(?:\\\\?)(?:Users|Program Files|Windows|a\\\\?ollama)|\\\\?AppData\\\\?|"
    r"[\w-]\.(?:dll|exe|DLL|EXE)\b|exit status 0xc0000[0-9a-fA-F]{3}\b"
)
_WINDOWS_PARTS = ("_windows.go:", ":\\", "AppData", ".dll", ".exe", "0xc0000", ".DLL", ".EXE")
# NTSTATUS codes a Windows runner exits with, and what each says of a GPU install
STATUS = {
    "0xc0000005": "exit status 0xc0000005 is a Windows access violation (STATUS_ACCESS_VIOLATION): a crash inside a "
    "driver or GPU library, often a rocBLAS/hipBLAS DLL of another HIP SDK than the runner was built with",
    "0xc0000135": "exit status 0xc0000135 is Windows' STATUS_DLL_NOT_FOUND: a DLL the runner needs (amdhip64_7.dll or "
    "amdhip64_6.dll from the AMD driver, hipblas.dll/rocblas.dll beside the runner, or CUDA's) is missing",
    "0xc0000139": "exit status 0xc0000139 is Windows' STATUS_ENTRYPOINT_NOT_FOUND: a DLL of another version than the "
    "runner expects (rocblas.dll/hipblas.dll from another HIP SDK, an older amdhip64 driver DLL)",
}
_STATUS = lazy_compile(r"0xc0000(?:005|135|139)\b")
# messages only Ollama's Windows code prints (discover/amd.go's detectOldAMDDriverWindows, amd_hip_windows.go)
WINDOWS_MESSAGES = frozenset(
    {"ollama-amd-driver-too-old-windows", "ollama-amdhip-dll-missing", "ollama-igpu-skipped-windows-v0129"}
)


def shows_windows(message_id: str, text: str) -> bool:
    """Whether a recognised line shows the log was written on Windows: a message only Windows prints, or Windows words."""
    if message_id in WINDOWS_MESSAGES:
        return True
    # a cheap test first: the pattern runs only on a line with one of its fixed parts (most lines have none)
    return any(part in text for part in _WINDOWS_PARTS) and bool(_WINDOWS.search(text))


def status_notes(text: str) -> list[str]:
    """What a Windows exit status in the line means (each once)."""
    return [STATUS[code] for code in dict.fromkeys(m.group(0).lower() for m in _STATUS.finditer(text))]
