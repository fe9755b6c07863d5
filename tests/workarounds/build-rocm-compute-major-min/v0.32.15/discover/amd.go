// from: ollama@v0.32.15:discover/amd.go (lines 9, 445-469: the Tensile-file filter; RocmComputeMajorMin has been gone since v0.12.4-rc0)
// not-applicable: build-rocm-compute-major-min
package discover
// filterUnsupportedROCmDevices removes ROCm devices whose gfx target doesn't have
// matching rocblas kernels bundled.
func filterUnsupportedROCmDevices(devices []ml.DeviceInfo, libDirs []string) []ml.DeviceInfo {
	supported := rocblasGFXTargets(libDirs)
	if len(supported) == 0 {
		return devices
	}

	override := hsaOverrideGFXTarget()
	var filtered []ml.DeviceInfo
	for _, dev := range devices {
		if dev.Library != "ROCm" {
			filtered = append(filtered, dev)
			continue
		}

		setROCmGFXTarget(&dev, override)
		gfx := dev.GFXTarget
		if gfx == "" {
			filtered = append(filtered, dev)
			continue
		}
		if supported[gfx] {
			filtered = append(filtered, dev)
		} else {
