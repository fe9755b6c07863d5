// from: ollama@v0.1.25:gpu/gpu.go (lines 1-3, 116, 152-165)
//go:build linux || windows

package gpu

func GetGPUInfo() GpuInfo {
	} else if AMDDetected() && gpuHandles.rocm != nil && (cpuVariant != "" || runtime.GOARCH != "amd64") {
		ver, err := AMDDriverVersion()
		if err == nil {
			slog.Info("AMD Driver: " + ver)
		}
		gfx := AMDGFXVersions()
		tooOld := false
		for _, v := range gfx {
			// ruleid: ollama-discovery-too-old gfx803=blocked gfx900=allowed gfx1030=allowed
			if v.Major < 9 {
				slog.Info("AMD GPU too old, falling back to CPU " + v.ToGFXString())
				tooOld = true
				break
			}

