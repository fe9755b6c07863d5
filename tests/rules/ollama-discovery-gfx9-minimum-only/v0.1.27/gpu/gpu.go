// from: ollama@v0.1.27:gpu/gpu.go (lines 1-3, 116, 152-178: the "too old" check, then the devices rocm_smi reports; no allowlist)
//go:build linux || windows

package gpu

func GetGPUInfo() GpuInfo {
	} else if AMDDetected() && gpuHandles.rocm != nil && (cpuVariant != "" || runtime.GOARCH != "amd64") {
		ver, err := AMDDriverVersion()
		if err == nil {
			slog.Info("AMD Driver: " + ver)
		} else {
			// For now this is benign, but we may eventually need to fail compatibility checks
			slog.Debug("error looking up amd driver version: %s", err)
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
		if !tooOld {
			// TODO - this algo can be shifted over to use sysfs instead of the rocm info library...
			// ruleid: ollama-discovery-gfx9-minimum-only gfx900=allowed gfx906=allowed gfx1030=allowed
			C.rocm_check_vram(*gpuHandles.rocm, &memInfo)
			if memInfo.err != nil {
				slog.Info(fmt.Sprintf("error looking up ROCm GPU memory: %s", C.GoString(memInfo.err)))
				C.free(unsafe.Pointer(memInfo.err))
