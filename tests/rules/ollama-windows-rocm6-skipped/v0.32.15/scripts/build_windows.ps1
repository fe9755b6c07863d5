# from: ollama@v0.32.15:scripts/build_windows.ps1 (lines 716-732)
function rocm6 {
    # KNOWN ISSUE: ROCm v6 on Windows is currently broken with upstream llama.cpp b8591+.
    # The vendors/hip.h guard (#if HIP_VERSION >= 60200000) assumes __hip_fp8_e4m3 exists,
    # but Windows ROCm 6.2 only has the _fnuz variant (__hip_fp8_e4m3_fnuz).
    # This causes a compile error in ggml-cuda/vendors/hip.h:240.
    # Use rocm7 instead, or wait for an upstream fix.
    mkdir -Force -path "${script:DIST_DIR}\" | Out-Null
    if ($script:ARCH -ne "arm64") {
        if ($script:HIP_PATH_V6) {
            # ruleid: ollama-windows-rocm6-skipped gfx1030=allowed gfx1031=allowed
            Write-Output "WARNING: ROCm v6 build is currently broken (FP8 type mismatch). Skipping."
            Write-Output "Use rocm7 instead."
        } else {
            Write-Output "ROCm v6 not detected, skipping"
        }
    }
}

