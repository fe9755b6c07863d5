// from: ollama@v0.5.1:discover/amd_linux.go (lines 1, 303-312: the "too old" check reads RocmComputeMin)
package discover

func AMDGetGPUInfo() ([]RocmGPUInfo, error) {

		if int(major) < RocmComputeMin {
			reason := fmt.Sprintf("amdgpu too old gfx%d%x%x", major, minor, patch)
			slog.Warn(reason, "gpu", gpuID)
			unsupportedGPUs = append(unsupportedGPUs, UnsupportedGPUInfo{
				GpuInfo: gpuInfo.GpuInfo,
				Reason:  reason,
			})

			continue
