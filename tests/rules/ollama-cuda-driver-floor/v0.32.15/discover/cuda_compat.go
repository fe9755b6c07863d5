// from: ollama@v0.32.15:discover/cuda_compat.go (lines 10-24)
const (
	cudaV12RuntimeMajor = 12

	minFatbinCompressionCUDARuntimeMinor  = 4
// ruleid: ollama-cuda-driver-floor sm_61=partial sm_75=allowed
	minFatbinCompressionNVIDIADriverMajor = 550

	minLegacyComputeJITCUDARuntimeMinor = 8
	// Older CUDA compute targets need newer drivers when they are JITed from PTX.
	minLegacyComputeJITNVIDIADriverMajor = 570
)

func filterOldCUDADriver(_ context.Context, devices []ml.DeviceInfo) []ml.DeviceInfo {
	oldCUDA := func(dev ml.DeviceInfo) bool {
// ruleid: ollama-cuda-driver-floor sm_61=partial sm_50=partial sm_70=allowed sm_75=allowed
		return dev.Library == "CUDA" && dev.ComputeMajor > 0 && dev.ComputeMajor < 7
	}
