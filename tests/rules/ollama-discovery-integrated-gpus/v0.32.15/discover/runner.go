// from: ollama@v0.32.15:discover/runner.go (lines 1, 31-34, 382-425)
package discover

// ruleid: ollama-discovery-integrated-gpus gfx900=allowed gfx1030=allowed

// ruleid: ollama-discovery-integrated-gpus gfx1151=allowed
var defaultIntegratedROCmGFXTargets = map[string]struct{}{
	// AMD Radeon 8060S / Ryzen AI Max+ 395.
	"gfx1151": {},
}

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

		// ruleid: ollama-discovery-integrated-gpus gfx90c=override-required gfx1103=override-required
		slog.Info("dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1",
			"id", device.ID,
			"library", device.Library,
			"compute", device.Compute(),
			"name", device.Name,
			"description", device.Description,
			"pci_id", device.PCIID)
	}

	return filtered
}

func integratedGPUAdmission() (allow, explicit bool) {
	enabledWithTrueDefault := envconfig.EnableIntegratedGPU(true)
	enabledWithFalseDefault := envconfig.EnableIntegratedGPU(false)
	if enabledWithTrueDefault == enabledWithFalseDefault {
		return enabledWithTrueDefault, true
	}
	return false, false
}

