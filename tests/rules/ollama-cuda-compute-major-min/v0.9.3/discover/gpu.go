// from: ollama@v0.9.3:discover/gpu.go (lines 66-70)
// With our current CUDA compile flags, older than 5.0 will not work properly
// (string values used to allow ldflags overrides at build time)
var (
// ruleid: ollama-cuda-compute-major-min sm_35=blocked sm_61=allowed sm_50=allowed
	CudaComputeMajorMin = "5"
	CudaComputeMinorMin = "0"
