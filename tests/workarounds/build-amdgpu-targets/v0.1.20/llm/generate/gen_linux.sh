# from: ollama@v0.1.20:llm/generate/gen_linux.sh (lines 18-38: amdGPUs() has only its own list, the one to edit)

# See https://llvm.org/docs/AMDGPUUsage.html#processors for reference
amdGPUs() {
    # live: build-amdgpu-targets
    GPU_LIST=(
        "gfx803"
        "gfx900"
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
