// from: ollama@v0.3.10:gpu/gpu.go (lines 60-60)
// ruleid: ollama-cuda-compute-major-min sm_37=blocked sm_50=allowed
var CudaComputeMin = [2]C.int{5, 0}
