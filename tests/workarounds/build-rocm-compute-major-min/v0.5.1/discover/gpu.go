// from: ollama@v0.5.1:discover/gpu.go (lines 1-3, 66-69: the minimum is the int RocmComputeMin, which -X cannot set; no RocmComputeMajorMin yet)
// not-applicable: build-rocm-compute-major-min
//go:build linux || windows

package discover

// With our current CUDA compile flags, older than 5.0 will not work properly
var CudaComputeMin = [2]C.int{5, 0}

var RocmComputeMin = 9
