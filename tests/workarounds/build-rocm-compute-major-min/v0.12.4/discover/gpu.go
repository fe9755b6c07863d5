// from: ollama@v0.12.4:discover/gpu.go (lines 1, 67-72: the device list of the new discovery; RocmComputeMajorMin is gone)
// stale: build-rocm-compute-major-min
package discover

		if dev.Library == "CUDA" || dev.Library == "ROCm" {
			info.MinimumMemory = 457 * format.MebiByte
		}
		if dev.Library == "ROCm" && rocmDir != "" {
			info.DependencyPath = append(info.DependencyPath, rocmDir)
		}
