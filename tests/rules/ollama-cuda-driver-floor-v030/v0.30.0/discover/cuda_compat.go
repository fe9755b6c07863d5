// from: ollama@v0.30.0:discover/cuda_compat.go (lines 10-32)
func filterOldCUDADriver(_ context.Context, devices []ml.DeviceInfo) []ml.DeviceInfo {
	oldCUDA := func(dev ml.DeviceInfo) bool {
// ruleid: ollama-cuda-driver-floor-v030 sm_61=partial sm_60=partial sm_75=allowed
		return dev.Library == "CUDA" && dev.ComputeMajor > 0 && dev.ComputeMajor < 7
	}

	needsCheck := false
	for _, dev := range devices {
		if oldCUDA(dev) {
			needsCheck = true
			break
		}
	}
	if !needsCheck {
		return devices
	}

	driver := nvidiaDriverMajorFromDevices(devices)
	if driver == 0 {
		slog.Warn("could not verify NVIDIA driver compatibility for an older NVIDIA GPU")
		return devices
	}
// ruleid: ollama-cuda-driver-floor-v030 sm_61=partial
	if driver >= 570 {
		return devices
