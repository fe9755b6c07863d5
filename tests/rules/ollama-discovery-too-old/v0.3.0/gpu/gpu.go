// from: ollama@v0.3.0:gpu/gpu.go (lines 1-3, 59-62)
//go:build linux || windows

package gpu

// With our current CUDA compile flags, older than 5.0 will not work properly
var CudaComputeMin = [2]C.int{5, 0}

// ruleid: ollama-discovery-too-old gfx803=blocked gfx900=allowed gfx1030=allowed gfx1103=allowed
var RocmComputeMin = 9
