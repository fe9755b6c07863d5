# from: ollama@v0.3.14:llm/generate/gen_linux.sh (lines 18-44: amdGPUs() returns $AMDGPU_TARGETS when set)
# See https://llvm.org/docs/AMDGPUUsage.html#processors for reference
amdGPUs() {
    # live: build-amdgpu-targets
    if [ -n "${AMDGPU_TARGETS}" ]; then
        echo "${AMDGPU_TARGETS}"
        return
    fi
    GPU_LIST=(
        "gfx900"
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
