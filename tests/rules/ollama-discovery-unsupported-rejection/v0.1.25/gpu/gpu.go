// from: ollama@v0.1.25:gpu/gpu.go (lines 1-3, 116, 152-169: a "too old" check, no "amdgpu is not supported" rejection yet)
// ok: ollama-discovery-unsupported-rejection
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
			if v.Major < 9 {
				slog.Info("AMD GPU too old, falling back to CPU " + v.ToGFXString())
				tooOld = true
				break
			}

			// TODO - remap gfx strings for unsupporetd minor/patch versions to supported for the same major
			// e.g. gfx1034 works if we map it to gfx1030 at runtime

		}
