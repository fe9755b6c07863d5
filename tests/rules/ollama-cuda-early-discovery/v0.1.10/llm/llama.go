// from: ollama@v0.1.10:llm/llama.go (lines 233-236)
// CheckVRAM returns the free VRAM in bytes on Linux machines with NVIDIA GPUs
func CheckVRAM() (int64, error) {
// ruleid: ollama-cuda-early-discovery sm_61=allowed sm_35=allowed
	cmd := exec.Command("nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits")
	var stdout bytes.Buffer
