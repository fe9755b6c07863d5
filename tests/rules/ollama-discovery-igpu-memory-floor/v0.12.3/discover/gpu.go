// from: ollama@v0.12.3:discover/gpu.go (line 76)
// ruleid: ollama-discovery-igpu-memory-floor gfx1103=override-required
const IGPUMemLimit = 1 * format.GibiByte // 512G is what they typically report, so anything less than 1G must be iGPU
