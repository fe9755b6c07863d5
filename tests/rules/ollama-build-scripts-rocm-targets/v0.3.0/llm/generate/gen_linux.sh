# from: ollama@v0.3.0:llm/generate/gen_linux.sh (lines 17-43)
# ruleid: ollama-build-scripts-rocm-targets gfx1030=allowed gfx803=blocked

# See https://llvm.org/docs/AMDGPUUsage.html#processors for reference
amdGPUs() {
    if [ -n "${AMDGPU_TARGETS}" ]; then
        echo "${AMDGPU_TARGETS}"
        return
    fi
    GPU_LIST=(
        # ruleid: ollama-build-scripts-rocm-targets gfx900=allowed
        "gfx900"
        # ruleid: ollama-build-scripts-rocm-targets gfx906=partial
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
