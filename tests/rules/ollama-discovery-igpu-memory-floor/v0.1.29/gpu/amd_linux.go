// from: ollama@v0.1.29:gpu/amd_linux.go (lines 28-29, 216-220)
	// TODO find a better way to detect iGPU instead of minimum memory
	IGPUMemLimit = 1024 * 1024 * 1024 // 512G is what they typically report, so anything less than 1G must be iGPU

		// ruleid: ollama-discovery-igpu-memory-floor gfx1103=override-required gfx90c=override-required gfx1030=allowed
		if totalMemory < IGPUMemLimit {
			slog.Info(fmt.Sprintf("amdgpu [%d] appears to be an iGPU with %dM reported total memory, skipping", id, totalMemory/1024/1024))
			skip[id] = struct{}{}
			continue
		}
