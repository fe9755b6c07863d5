// from: ollama@v0.32.15:discover/amd.go (lines 9, 70-84)
package discover

func hsaOverrideGFXTarget() string {
	return rocmGFXTargetOverride(os.Getenv("HSA_OVERRIDE_GFX_VERSION"))
}

// ruleid: ollama-discovery-override-translation gfx900=allowed gfx1030=allowed
func rocmGFXTargetOverride(value string) string {
	value = strings.TrimSpace(value)
	if value == "" {
		return ""
	}
	if strings.HasPrefix(value, "gfx") {
		if major, minor := parseGFXTarget(value); major != 0 || minor != 0 {
			return value
		}
		return ""
	}
