#!/usr/bin/env bash
# On the GPU machine (docs/nvidia.md, "On a real NVIDIA GPU"): build llama.cpp's CUDA backend for several
# architectures, put it where Ollama keeps a CUDA runner (/usr/local/lib/ollama/cuda_v13/libggml-cuda.so), then run
# `gfxgate doctor` on the live machine and `gfxgate artifacts` on the library, with NVIDIA's cuobjdump beside it.
# Needs .devprobe/ as tools/gpu-study/prepare.sh leaves it (llama-src.tar.gz, whl/). Writes everything under $OUT.
set -u
P=$PWD/.devprobe
O=${OUT:?OUT names the folder that comes back}
ARCHS=${ARCHS:-61-real;90}           # sm_61 cubin (Pascal), sm_90 cubin + compute_90 PTX (this H200)
BUILD_LIMIT=${BUILD_LIMIT:-420}      # seconds; the doctor runs come back even when the build does not finish
exec > >(tee "$O/run.log") 2>&1
set -x
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$P"/whl/*.whl
export PYTHONPATH=/tmp/site GFXGATE_NO_PROGRESS=1
g() { python3 -m gfxgate "$@"; }
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,compute_cap,memory.total --format=csv > "$O/nvidia-smi.csv"
cat /proc/driver/nvidia/version > "$O/proc-driver-nvidia-version.txt"
# 1. the machine as it is: a driver and a GPU, no Ollama runner
g doctor --format text > "$O/doctor-before.txt"; echo "doctor rc=$?"
# 2. the CUDA runner, built for several architectures
mkdir -p /tmp/b && tar xzf "$P/llama-src.tar.gz" -C /tmp/b
S=/tmp/b/llama.cpp
cmake -S $S -B $S/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
  -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" \
  -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF > "$O/cmake.log" 2>&1
start=$(date +%s)
timeout "$BUILD_LIMIT" cmake --build $S/build --target ggml-cuda -j16 > "$O/build.log" 2>&1; echo "build rc=$? in $(( $(date +%s) - start )) s"
L=$(find $S/build -name 'libggml-cuda.so' | head -1)
[ -n "$L" ] || { echo "no libggml-cuda.so"; exit 0; }
ls -l "$L"
mkdir -p /usr/local/lib/ollama/cuda_v13 && cp "$L" /usr/local/lib/ollama/cuda_v13/
C=/usr/local/lib/ollama/cuda_v13/libggml-cuda.so
# 3. NVIDIA's own listing, then gfxgate's, of the same file
/usr/local/cuda/bin/cuobjdump --list-elf --list-ptx "$C" > "$O/cuobjdump.txt" 2>&1; echo "cuobjdump rc=$?"
/usr/bin/time -v python3 -m gfxgate artifacts --format json -o "$O/artifacts.json" "$C" 2> "$O/artifacts-time.txt"
echo "artifacts rc=$?"
g artifacts --format text -t sm_61 -t sm_90 -t sm_70 "$C" > "$O/artifacts.txt"; echo "artifacts text rc=$?"
# 4. doctor with the runner in place: text, JSON, and the files it read (a real captured NVIDIA machine)
g doctor --format text > "$O/doctor.txt"; echo "doctor rc=$?"
g doctor --format json -o "$O/doctor.json"; echo "doctor json rc=$?"
g doctor --format text --collect "$O/h200-machine.tar.gz" > /dev/null; echo "collect rc=$?"
ls -la "$O"
