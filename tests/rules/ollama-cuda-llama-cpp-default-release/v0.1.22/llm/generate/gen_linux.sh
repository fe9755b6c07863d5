# from: ollama@v0.1.22:llm/generate/gen_linux.sh (lines 138-138)
# ruleid: ollama-cuda-llama-cpp-default-release sm_61=unknown
    CMAKE_DEFS="-DLLAMA_CUBLAS=on ${COMMON_CMAKE_DEFS} ${CMAKE_DEFS}"
