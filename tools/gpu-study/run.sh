#!/usr/bin/env bash
# The device side of the study's protocol (issue 27). On the GPU machine, from the repository root, after
# tools/gpu-study/prepare.sh filled .devprobe/ on the CPU machine:
#     bash .devprobe/run.sh STEP [STEP…]       
# Steps:
#   build   llama.cpp with CUDA (sm_90) and Vulkan in one build (GGML_BACKEND_DL), commit set from the sdist;
#           writes the model beside it (write_model.py, gguf-py of the same llama.cpp tree). Skipped when done.
#   sweep   gfxgate sweep, cuda and vulkan endpoints, num_gpu 0,1,2,8,16,24,-1, REPEATS (5) per cell,
#           NUM_PREDICT (512); resumes the worklog (or .devprobe/resume/sweep.jsonl on a cold machine).
#   soak    one cell (SOAK_ENDPOINT, SOAK_NUM_GPU: vulkan, -1) repeated, resumable the same way (soak.jsonl).
#   ctx     the context sweep (issue 42): cuda and vulkan, num_gpu -1, contexts CTX (2K to 64K), a prompt filling
#           PROMPT_SHARE (25%) of each, CTX_PREDICT (128) tokens, REPEATS per cell after one warm-up, resumable the
#           same way (ctx.jsonl; .devprobe/resume/ctx.jsonl); the verdict and plot in ctx.md, ctx.svg, ctx.png.
#   pack    $OUT/study.tar.gz: worklogs, server logs, nvidia-smi samples, build and device facts.
# sweep and soak stop themselves (SIGINT: the run in flight is not recorded) END_S seconds (570) after the script
# started, less 15 s for pack, so one call stays inside the device's 10-minute limit: make run.sh the command's
# first step (anything before it counts against the limit, not against END_S).
# Work goes to GPU_STUDY_WORK (default .devwork/ beside .devprobe/; carry replaces .devprobe/ on every call, the work
# folder stays while the machine is warm). The committed samples were made with GPU_STUDY_WORK=/srv/gpu-study, so the
# paths in their worklogs and logs name no machine's checkout. Every step first runs `build` (a machine that came back cold rebuilds). nvidia-smi samples the GPU's
# compute processes every 200 ms beside sweep and soak; gfxgate joins them to its runs by server pid.
set -uo pipefail
P=$(cd "$(dirname "$0")" && pwd); W=${GPU_STUDY_WORK:-$(dirname "$P")/.devwork}; mkdir -p "$W"
S=$W/llama.cpp; B=$S/build/bin; V=$W/usr; M=$W/model.gguf
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NUM_GPU=${NUM_GPU:-0,1,2,8,16,24,-1}; REPEATS=${REPEATS:-5}; NUM_PREDICT=${NUM_PREDICT:-512}
PROMPT=${PROMPT:-Why is the sky blue? Answer in one long paragraph.}
t0=$(date +%s); log() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
left() { echo $(( t0 + ${END_S:-570} - 15 - $(date +%s) )); }
seed() { [ -s "$W/sw/$1" ] || [ ! -s "$P/resume/$1" ] || cp "$P/resume/$1" "$W/sw/$1"; }

build() {
  for f in "$P"/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  if [ -x "$B/llama-server" ] && [ -s "$M" ]; then log "build: already there"; return 0; fi
  rm -rf "$S" "$V"; tar xzf "$P/llama-src.tar.gz" -C "$W" && tar xzf "$P/vkp.tar.gz" -C "$W" || return 1
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$V/lib/x86_64-linux-gnu" "$V/bin/glslc" >"$W/glslc"; chmod +x "$W/glslc"
  commit=$(cat "$P/llama-src.commit" 2>/dev/null || echo unknown)
  (PYTHONPATH=$S/gguf-py python3 "$P/write_model.py" "$M" >"$W/model.txt" 2>&1) &
  cmake -S "$S" -B "$S/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_BUILD_COMMIT="$commit" -DLLAMA_BUILD_NUMBER=0 \
    -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=OFF \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF \
    -DGGML_VULKAN=ON -DVulkan_INCLUDE_DIR="$V/include" -DVulkan_LIBRARY="$V/lib/x86_64-linux-gnu/libvulkan.so" \
    -DVulkan_GLSLC_EXECUTABLE="$W/glslc" -DSPIRV-Headers_DIR="$V/share/cmake/SPIRV-Headers" >"$W/cmake.log" 2>&1 || { tail -30 "$W/cmake.log"; return 1; }
  cmake --build "$S/build" --target llama-server -j16 >"$W/build.log" 2>&1 || { tail -40 "$W/build.log"; return 1; }
  wait; cat "$W/model.txt"; log "build: done"
  "$B/llama-server" --version >"$W/version.txt" 2>&1; "$B/llama-server" --list-devices >"$W/list-devices.txt" 2>&1
  cat "$W/version.txt" "$W/list-devices.txt"
}

site() {
  [ -d "$W/site/gfxgate" ] || python3 -m pip install -q --no-index --no-deps --no-compile --target "$W/site" "$P"/whl/*.whl || return 1
  export PYTHONPATH=$W/site
}

sampler() {  # nvidia-smi beside a step: compute apps every 200 ms, and the whole GPU every second
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader -lms 200 >>"$W/sw/nvidia-smi-apps.csv" 2>&1 &
  echo $! >"$W/sampler.pid"
  nvidia-smi --query-gpu=timestamp,name,driver_version,memory.total,memory.used,utilization.gpu --format=csv,noheader -l 1 >>"$W/sw/nvidia-smi-gpu.csv" 2>&1 &
  echo $! >>"$W/sampler.pid"
}
stop_sampler() { for p in $(cat "$W/sampler.pid" 2>/dev/null); do kill "$p" 2>/dev/null; done; rm -f "$W/sampler.pid"; }

gsweep() {  # WORKLOG SECONDS ARGS…
  local worklog=$1 seconds=$2; shift 2
  timeout -s INT "$seconds" python3 -P -m gfxgate sweep \
    --llama-server cuda="$B/llama-server --device CUDA0" --llama-server vulkan="$B/llama-server --device Vulkan0" \
    --model-file "$M" --num-predict "$NUM_PREDICT" --prompt "$PROMPT" --timeout 180 --gpu-target sm_90 \
    --gpu-memory-log "$W/sw/nvidia-smi-apps.csv" --progress plain --worklog "$worklog" "$@"
}

sweep() {
  mkdir -p "$W/sw"; seed sweep.jsonl; sampler
  # every cell once first (a call cut short still has each cell), then the other repeats (resumed)
  # (packed after each pass: a call cut off at the device's limit still brings back what finished)
  [ "$(left)" -gt 30 ] && gsweep "$W/sw/sweep.jsonl" "$(left)" --num-gpu "$NUM_GPU" --repeat 1; pack >/dev/null
  [ "$(left)" -gt 30 ] && gsweep "$W/sw/sweep.jsonl" "$(left)" --num-gpu "$NUM_GPU" --repeat "$REPEATS"; pack >/dev/null
  stop_sampler; log "sweep: $(wc -l <"$W/sw/sweep.jsonl") runs in the worklog"
}

soak() {
  mkdir -p "$W/sw"; seed soak.jsonl; sampler
  local ep=${SOAK_ENDPOINT:-vulkan} ng=${SOAK_NUM_GPU:--1}
  [ "$(left)" -gt 30 ] && timeout -s INT "$(left)" python3 -P -m gfxgate sweep --llama-server "$ep=$B/llama-server --device $( [ "$ep" = cuda ] && echo CUDA0 || echo Vulkan0)" \
    --model-file "$M" --num-predict "$NUM_PREDICT" --prompt "$PROMPT" --timeout 180 --gpu-target sm_90 \
    --gpu-memory-log "$W/sw/nvidia-smi-apps.csv" --progress plain --worklog "$W/sw/soak.jsonl" --num-gpu "$ng" --repeat 10000
  stop_sampler; pack >/dev/null; log "soak: $(wc -l <"$W/sw/soak.jsonl" 2>/dev/null) runs in the worklog"
}

ctx() {
  mkdir -p "$W/sw"; seed ctx.jsonl; sampler
  local axes=(--num-gpu -1 --ctx "${CTX:-2048,4096,8192,16384,32768,65536}" --prompt-tokens "${PROMPT_SHARE:-25%}")
  # every context once (after its warm-up) first, so a call cut short has the whole curve; then the repeats (resumed)
  [ "$(left)" -gt 30 ] && NUM_PREDICT=${CTX_PREDICT:-128} gsweep "$W/sw/ctx.jsonl" "$(left)" "${axes[@]}" --repeat 1
  pack >/dev/null
  [ "$(left)" -gt 30 ] && NUM_PREDICT=${CTX_PREDICT:-128} gsweep "$W/sw/ctx.jsonl" "$(left)" "${axes[@]}" --repeat "$REPEATS"
  stop_sampler
  python3 -P -m gfxgate sweep report "$W/sw/ctx.jsonl" -o "$W/sw/ctx.md" --plot "$W/sw/ctx.svg"
  python3 -P -m gfxgate sweep report "$W/sw/ctx.jsonl" --format png -o "$W/sw/ctx.png"
  pack >/dev/null; log "ctx: $(wc -l <"$W/sw/ctx.jsonl") runs in the worklog"; head -5 "$W/sw/ctx.md"
}

pack() {
  nvidia-smi >"$W/sw/nvidia-smi.txt" 2>&1
  cp "$W/version.txt" "$W/list-devices.txt" "$W/model.txt" "$W/sw/" 2>/dev/null
  grep -E "CMAKE_CUDA_ARCHITECTURES|GGML_VULKAN|LLAMA_BUILD_COMMIT" "$S/build/CMakeCache.txt" >"$W/sw/cmake-cache.txt" 2>/dev/null
  tar czf "${OUT:-$W}/study.tar.gz" -C "$W" sw && ls -la "${OUT:-$W}/study.tar.gz"
}

for step in "$@"; do
  case $step in
    build) build || exit 1 ;;
    sweep|soak|ctx) build && site || exit 1; $step ;;
    pack) pack ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
log "done: $*"
