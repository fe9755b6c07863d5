// from: ollama@v0.30.0:discover/llama_server.go (lines 288-296)
		if library == "CUDA" {
			cc, ok := ccByIndex[deviceIndex]
			if ok && len(cudaArchSet) > 0 {
				if !cudaArchSet[cc.arch] {
// ruleid: ollama-cuda-exact-arch-match sm_60=allowed sm_53=blocked
					slog.Info("skipping CUDA device — compute capability not in compiled architectures",
						"device", description, "cc", cc.arch, "archs", cudaArchs,
						"libDirs", libDirs)
					deviceIndex++
					continue
