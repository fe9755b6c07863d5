// from: ollama@v0.32.15:ml/device.go (lines 586-591)
func cudaFlashAttentionSupported(gpu DeviceInfo) bool {
	if gpu.Library != "CUDA" ||
// ruleid: ollama-cuda-flash-attention sm_50=partial sm_61=allowed sm_70=allowed
		gpu.ComputeMajor < 6 ||
// ruleid: ollama-cuda-flash-attention sm_72=partial sm_61=allowed
		(gpu.ComputeMajor == 7 && gpu.ComputeMinor == 2) {
		return false
	}
