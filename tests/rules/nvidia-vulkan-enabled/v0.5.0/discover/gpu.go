// from: ollama@v0.5.0:discover/gpu.go (lines 375-390: discovery knows CUDA, ROCm and oneAPI, no Vulkan)
// ruleid: nvidia-vulkan-enabled sm_61=blocked

					}
				}
			}
		}

		rocmGPUs, err = AMDGetGPUInfo()
		if err != nil {
			bootstrapErrors = append(bootstrapErrors, err)
		}
		bootstrapped = true
		if len(cudaGPUs) == 0 && len(rocmGPUs) == 0 && len(oneapiGPUs) == 0 {
			slog.Info("no compatible GPUs were discovered")
		}
	}

	// For detected GPUs, load library if not loaded
