// from: ollama@v0.12.3:discover/amd_linux.go (lines 1, 51, 377-391)
package discover

func AMDGetGPUInfo() ([]RocmGPUInfo, error) {
			gfx := gpuInfo.Compute
			if !slices.Contains[[]string, string](supported, gfx) {
				// ruleid: ollama-discovery-unsupported-rejection gfx900=partial gfx1030=partial
				reason := fmt.Sprintf("amdgpu is not supported (supported types:%s)", supported)
				slog.Warn(reason, "gpu_type", gfx, "gpu", gpuInfo.ID, "library", libDir)
				unsupportedGPUs = append(unsupportedGPUs, UnsupportedGPUInfo{
					GpuInfo: gpuInfo.GpuInfo,
					Reason:  reason,
				})

				// TODO - consider discrete markdown just for ROCM troubleshooting?
				slog.Warn("See https://github.com/ollama/ollama/blob/main/docs/gpu.md#overrides for HSA_OVERRIDE_GFX_VERSION usage")
				continue
			} else {
				slog.Info("amdgpu is supported", "gpu", gpuInfo.ID, "gpu_type", gfx)
			}
