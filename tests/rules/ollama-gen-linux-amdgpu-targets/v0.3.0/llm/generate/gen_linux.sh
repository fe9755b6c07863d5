# from: ollama@v0.3.0:llm/generate/gen_linux.sh (lines 17-43)
# See https://llvm.org/docs/AMDGPUUsage.html#processors for reference
amdGPUs() {
    # ruleid: ollama-gen-linux-amdgpu-targets gfx803=override-required gfx1103=override-required
    if [ -n "${AMDGPU_TARGETS}" ]; then
        echo "${AMDGPU_TARGETS}"
        return
    fi
    GPU_LIST=(
        # ruleid: ollama-gen-linux-amdgpu-targets gfx900=allowed
        "gfx900"
        # ruleid: ollama-gen-linux-amdgpu-targets gfx906=override-required
        "gfx906:xnack-"
        "gfx908:xnack-"
        "gfx90a:xnack+"
        "gfx90a:xnack-"
        "gfx940"
        "gfx941"
        "gfx942"
        "gfx1010"
        "gfx1012"
        "gfx1030"
        "gfx1100"
        "gfx1101"
        "gfx1102"
    )
    (
        IFS=$';'
        echo "'${GPU_LIST[*]}'"
    )
}
