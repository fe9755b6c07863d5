// from: ollama@v0.32.15:discover/amd.go (lines 1-1, 478-487)
// AMD discovery needs a small amount of backend-specific handling beyond the
func detectOldAMDDriverWindows() {
	if runtime.GOOS != "windows" {
		return
	}
	_, errV6 := exec.LookPath("amdhip64_6.dll")
	_, errV7 := exec.LookPath("amdhip64_7.dll")
	if errV6 == nil && errV7 != nil {
		// ruleid: ollama-discovery-old-amd-driver-windows gfx1031=allowed gfx1030=allowed
		slog.Warn("AMD driver is too old. Update your AMD driver to enable GPU inference.")
	}
}
