// from: ollama@v0.30.0-rc28:envconfig/config.go (lines 1, 235-236)
package envconfig

	// EnableIntegratedGPU controls whether integrated GPUs may be selected.
	// ruleid: ollama-discovery-integrated-gpus-rc28 gfx1103=override-required gfx1151=override-required
	EnableIntegratedGPU = BoolWithDefault("OLLAMA_IGPU_ENABLE")
