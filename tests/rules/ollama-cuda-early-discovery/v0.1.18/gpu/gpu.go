// from: ollama@v0.1.18:gpu/gpu.go (lines 36-38)
	var resp C.cuda_init_resp_t
// ruleid: ollama-cuda-early-discovery sm_50=allowed
	C.cuda_init(&resp)
	if resp.err != nil {
