// from: ollama@v0.32.15:discover/runner.go (lines 1, 31-34, 382-412; defaultIntegratedROCmGFXTargets keeps ROCm devices only: on Vulkan gfx1151 is dropped like any integrated GPU)
package discover

var defaultIntegratedROCmGFXTargets = map[string]struct{}{
	// AMD Radeon 8060S / Ryzen AI Max+ 395.
	"gfx1151": {},
}

// ruleid: ollama-vulkan-integrated-gpus gfx900=allowed gfx1030=allowed
func filterIntegratedGPUs(devices []ml.DeviceInfo) []ml.DeviceInfo {
	if runtime.GOOS == "darwin" && runtime.GOARCH == "arm64" {
		return devices
	}

	allow, explicit := integratedGPUAdmission()
	filtered := devices[:0]
	for _, device := range devices {
		if !device.Integrated {
			filtered = append(filtered, device)
			continue
		}

		if explicit {
			if allow {
				filtered = append(filtered, device)
				continue
			}
		} else if integratedGPUAllowedByDefault(device) {
			filtered = append(filtered, device)
			continue
		}

		// ruleid: ollama-vulkan-integrated-gpus gfx1103=override-required gfx1151=override-required gfx90c=override-required
		slog.Info("dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1",
			"id", device.ID,
			"library", device.Library,
			"compute", device.Compute(),
			"name", device.Name,
			"description", device.Description,
			"pci_id", device.PCIID)
	}
