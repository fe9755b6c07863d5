# from: ollama@v0.3.0:llm/generate/gen_common.sh (lines 42-44)
    if [ -z "${CMAKE_CUDA_ARCHITECTURES}" ] ; then
# ruleid: ollama-cuda-script-arch-lists sm_61=allowed sm_50=allowed sm_35=blocked
        CMAKE_CUDA_ARCHITECTURES="50;52;61;70;75;80"
    fi
