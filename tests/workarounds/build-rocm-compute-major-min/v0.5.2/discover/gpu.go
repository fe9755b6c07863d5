// from: ollama@v0.5.2:discover/gpu.go (lines 1-3, 66-74: RocmComputeMajorMin, a string that -ldflags -X can set)
//go:build linux || windows

package discover

// With our current CUDA compile flags, older than 5.0 will not work properly
// (string values used to allow ldflags overrides at build time)
var (
	CudaComputeMajorMin = "5"
	CudaComputeMinorMin = "0"
)

// live: build-rocm-compute-major-min
var RocmComputeMajorMin = "9"
