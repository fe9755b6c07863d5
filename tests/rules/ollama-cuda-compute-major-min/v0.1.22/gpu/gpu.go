// from: ollama@v0.1.22:gpu/gpu.go (lines 34-34)
// ruleid: ollama-cuda-compute-major-min sm_52=blocked sm_61=allowed
const CudaComputeMajorMin = 6
