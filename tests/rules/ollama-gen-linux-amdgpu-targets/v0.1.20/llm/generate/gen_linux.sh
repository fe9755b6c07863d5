# from: ollama@v0.1.20:llm/generate/gen_linux.sh (lines 19-39: no AMDGPU_TARGETS override yet)
# See https://llvm.org/docs/AMDGPUUsage.html#processors for reference
amdGPUs() {
    GPU_LIST=(
        # ruleid: ollama-gen-linux-amdgpu-targets gfx803=allowed gfx1103=blocked gfx1151=blocked
        "gfx803"
        "gfx900"
        # ruleid: ollama-gen-linux-amdgpu-targets gfx906=partial
        "gfx906:xnack-"
        "gfx908:xnack-"
        "gfx90a:xnack+"
        "gfx90a:xnack-"
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
