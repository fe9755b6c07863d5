// from: ollama@v0.20.0:discover/runner.go (lines 33-35)

// ruleid: ollama-cuda-runner-discovery sm_61=allowed sm_35=allowed
func GPUDevices(ctx context.Context, runners []ml.FilteredRunnerDiscovery) []ml.DeviceInfo {
	deviceMu.Lock()
