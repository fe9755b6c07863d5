// from: ollama@v0.30.0:ml/device.go (lines 586-591)
func cudaFlashAttentionSupported(gpu DeviceInfo) bool {
	if gpu.Library != "CUDA" ||
// ruleid: ollama-cuda-flash-attention sm_61=partial sm_60=partial sm_75=allowed
		gpu.ComputeMajor < 7 ||
		(gpu.ComputeMajor == 7 && gpu.ComputeMinor == 2) {
		return false
	}
