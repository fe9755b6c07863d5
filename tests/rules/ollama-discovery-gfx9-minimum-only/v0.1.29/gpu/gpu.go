// from: ollama@v0.1.29:gpu/gpu.go (lines 1-3, 89, 125-130: discovery moved to AMDGetGPUInfo in amd_linux.go, with the rocBLAS allowlist)
// ok: ollama-discovery-gfx9-minimum-only
//go:build linux || windows

package gpu

func GetGPUInfo() GpuInfo {
	} else {
		AMDGetGPUInfo(&resp)
		if resp.Library != "" {
			return resp
		}
	}
