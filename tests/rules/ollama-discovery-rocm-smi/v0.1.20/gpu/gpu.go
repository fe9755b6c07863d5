// from: ollama@v0.1.20:gpu/gpu.go (lines 1-3, 111, 141-149)
//go:build linux || windows

package gpu

func GetGPUInfo() GpuInfo {
	} else if gpuHandles.rocm != nil {
		// ruleid: ollama-discovery-rocm-smi gfx803=allowed gfx900=allowed gfx1030=allowed gfx1103=allowed
		C.rocm_check_vram(*gpuHandles.rocm, &memInfo)
		if memInfo.err != nil {
			log.Printf("error looking up ROCm GPU memory: %s", C.GoString(memInfo.err))
			C.free(unsafe.Pointer(memInfo.err))
		} else {
			resp.Library = "rocm"
		}
	}
