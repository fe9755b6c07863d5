// from: ollama@v0.5.2:discover/gpu.go (lines 1, 66-74)
//go:build linux || windows


// With our current CUDA compile flags, older than 5.0 will not work properly
// (string values used to allow ldflags overrides at build time)
var (
	CudaComputeMajorMin = "5"
	CudaComputeMinorMin = "0"
)
// ruleid: ollama-discovery-rocm-compute-major-min gfx803=override-required gfx900=allowed gfx1030=allowed

var RocmComputeMajorMin = "9"
