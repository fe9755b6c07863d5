// from: ollama@v0.30.0-rc28:discover/runner.go (lines 1, 359-392)
package discover

// ruleid: ollama-vulkan-integrated-gpus-rc28 gfx900=allowed gfx1030=allowed gfx1201=allowed
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

		// ruleid: ollama-vulkan-integrated-gpus-rc28 gfx1103=override-required gfx1151=override-required gfx90c=override-required
		slog.Info("dropping integrated GPU",
			"id", device.ID,
			"library", device.Library,
			"compute", device.Compute(),
			"name", device.Name,
			"description", device.Description,
			"pci_id", device.PCIID)
	}

	return filtered
}
