// from: ollama@v0.32.15:ml/device.go (lines 1, 670-673)
package ml

// Set the init validation environment variable
func (d DeviceInfo) AddInitValidation(env map[string]string) {
	// ruleid: ollama-discovery-deep-init-probe-v030 gfx900=allowed gfx1030=allowed gfx1103=allowed
	env["GGML_CUDA_INIT"] = "1" // force deep initialization to trigger crash on unsupported GPUs
}
