// from: ollama@v0.12.3:discover/amd_common.go (lines 1-3, 26-36)
//go:build linux || windows

package discover

// ruleid: ollama-discovery-rocblas-allowlist gfx900=partial gfx1030=partial gfx803=partial
func GetSupportedGFX(libDir string) ([]string, error) {
	var ret []string
	files, err := filepath.Glob(filepath.Join(libDir, "rocblas", "library", "TensileLibrary_lazy_gfx*.dat"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		ret = append(ret, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "TensileLibrary_lazy_"), ".dat"))
	}
	return ret, nil
}
