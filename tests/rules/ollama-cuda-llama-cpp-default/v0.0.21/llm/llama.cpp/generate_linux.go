// from: ollama@v0.0.21:llm/llama.cpp/generate_linux.go (lines 19-19)
// ruleid: ollama-cuda-llama-cpp-default sm_61=unknown
//go:generate cmake -S ggml -B ggml/build/cuda -DLLAMA_CUBLAS=on -DLLAMA_ACCELERATE=on -DLLAMA_K_QUANTS=on
