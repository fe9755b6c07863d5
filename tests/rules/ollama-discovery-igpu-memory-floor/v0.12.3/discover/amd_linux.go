// from: ollama@v0.12.3:discover/amd_linux.go (lines 318-327)
		// iGPU detection, remove this check once we can support an iGPU variant of the rocm library
		// ruleid: ollama-discovery-igpu-memory-floor gfx1103=override-required gfx1030=allowed
		if totalMemory < IGPUMemLimit {
			reason := "unsupported Radeon iGPU detected skipping"
			slog.Info(reason, "id", gpuInfo.ID, "total", format.HumanBytes2(totalMemory))
			unsupportedGPUs = append(unsupportedGPUs, UnsupportedGPUInfo{
				GpuInfo: gpuInfo.GpuInfo,
				Reason:  reason,
			})
			continue
		}
