# from: therock@therock-7.14:cmake/therock_amdgpu_targets.cmake (lines 47-78, 91-93)
# ruleid: therock-target-excludes gfx803=blocked gfx1013=blocked

# gfx900
# ruleid: therock-target-excludes gfx900=allowed
therock_add_amdgpu_target(gfx900 "Vega 10 / MI25" FAMILY dgpu-all gfx900-dgpu
  EXCLUDE_TARGET_PROJECTS
    hipBLASLt # https://github.com/ROCm/TheRock/issues/1062
    hipSPARSELt # https://github.com/ROCm/TheRock/issues/2042
    composable_kernel # https://github.com/ROCm/TheRock/issues/1245
    rocWMMA # https://github.com/ROCm/TheRock/issues/1944
    hipTensor # https://github.com/ROCm/TheRock/issues/2074
    rocprofiler-compute # https://github.com/ROCm/TheRock/issues/2892
)

# gfx90c
# ruleid: therock-target-excludes gfx90c=allowed
therock_add_amdgpu_target(gfx90c "AMD Renoir/Lucienne/Cezanne iGPU" FAMILY igpu-all gfx90c-igpu
  EXCLUDE_TARGET_PROJECTS
    hipBLASLt # https://github.com/ROCm/TheRock/issues/1062
    hipSPARSELt # https://github.com/ROCm/TheRock/issues/2042
    composable_kernel # https://github.com/ROCm/TheRock/issues/1245
    rocWMMA # https://github.com/ROCm/TheRock/issues/1944
    hipTensor # https://github.com/ROCm/TheRock/issues/2074
    rocprofiler-compute # https://github.com/ROCm/TheRock/issues/2892
)

# gfx906 (separate family - different instruction support from gfx908/gfx90a)
# ruleid: therock-target-excludes gfx906=allowed
therock_add_amdgpu_target(gfx906 "Radeon VII / MI50 CDNA" FAMILY dgpu-all gfx906-dgpu
  EXCLUDE_TARGET_PROJECTS
    hipBLASLt # https://github.com/ROCm/TheRock/issues/1062
    hipSPARSELt # https://github.com/ROCm/TheRock/issues/2042
    composable_kernel # https://github.com/ROCm/TheRock/issues/1245
    rocWMMA # https://github.com/ROCm/TheRock/issues/1944
    hipTensor # https://github.com/ROCm/TheRock/issues/2074
    rocprofiler-compute # https://github.com/ROCm/TheRock/issues/2892
)

# gfx94X family
# ruleid: therock-target-excludes gfx942=allowed
therock_add_amdgpu_target(gfx942 "MI300A/MI300X CDNA" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)
