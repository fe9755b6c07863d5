#!/usr/bin/env bash
# Prepare, on a CPU machine with network, everything the GPU machine needs for the study's protocol (issue 27):
#     tools/gpu-study/prepare.sh [DEST]
# DEST (default .devprobe of this checkout; .git/info/exclude should ignore it) is what the device call carries.
#   DEST/llama-src.tar.gz  vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist; DEST/llama-src.commit its commit (CHANGELOG)
#   DEST/gl/*.deb          the Vulkan loader (Debian bookworm) for / there
#   DEST/vkp.tar.gz        glslc + libshaderc1 (bookworm), libvulkan-dev + spirv-headers + libvulkan1 (sid)
#   DEST/whl/*.whl         gfxgate (this checkout) and its dependencies for cp312 (the model is written there with
#                          the gguf-py of the same llama.cpp tree)
#   DEST/run.sh, DEST/write_model.py   the device side (copies of tools/gpu-study/)
# Needs python3 -m pip, apt-get, dpkg. The sid packages come through tests/debian.py's private apt tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
DEST=$(mkdir -p "${1:-$repo/.devprobe}" && cd "${1:-$repo/.devprobe}" && pwd)
PY=${PYTHON:-python3}
SDIST_DIR=${SDIST_DIR:-$(mktemp -d)}
mkdir -p "$DEST/gl" "$DEST/whl" "$SDIST_DIR"
cd "$repo"
cp "$here/run.sh" "$here/write_model.py" "$DEST/"

if [ ! -s "$DEST/llama-src.tar.gz" ]; then
  sd=$(ls -d "$SDIST_DIR"/llama_cpp_python-0.3.36 2>/dev/null || true)
  if [ -z "$sd" ]; then
    "$PY" -m pip download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$SDIST_DIR"
    tar xzf "$SDIST_DIR"/llama_cpp_python-0.3.36.tar.gz -C "$SDIST_DIR"
    sd="$SDIST_DIR/llama_cpp_python-0.3.36"
  fi
  tar -C "$sd/vendor" --exclude=llama.cpp/models --exclude=llama.cpp/docs --exclude=llama.cpp/benches \
      --exclude=llama.cpp/tests --exclude=llama.cpp/media --exclude=llama.cpp/build -czf "$DEST/llama-src.tar.gz" llama.cpp
  # the sdist has no git metadata (a build would say "build 0 (unknown)"): its CHANGELOG names the commit
  grep -m1 -oE 'llama\.cpp@[0-9a-f]{7,40}' "$sd/CHANGELOG.md" | cut -d@ -f2 >"$DEST/llama-src.commit"
fi

if ! ls "$DEST"/gl/libglvnd0_*.deb >/dev/null 2>&1; then
  (cd "$DEST/gl" && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)  # NVIDIA's Vulkan ICD is libGLX_nvidia: it needs libglvnd
fi

if [ ! -s "$DEST/vkp.tar.gz" ]; then
  stage=$(mktemp -d)
  (cd "$stage" && apt-get download glslc libshaderc1)
  sid=$("$PY" -c 'import shutil, sys; sys.path.insert(0, "."); from tests.debian import foreign_packages; print(foreign_packages("sid", ["libvulkan-dev", "spirv-headers", "libvulkan1"], shutil.which("apt-get"), shutil.which("dpkg")))')
  for f in "$stage"/*.deb; do dpkg -x "$f" "$stage/tree"; done
  cp -a "$sid"/usr "$stage/tree/"
  tar -C "$stage/tree" -czf "$DEST/vkp.tar.gz" usr
  rm -rf "$stage"
fi

rm -f "$DEST"/whl/gfxgate-*.whl
"$PY" -m pip wheel -q --no-deps -w "$DEST/whl" .
plat="--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64"
# gfxgate's dependencies (not gfxgate itself: the wheel above is this checkout's code) and gguf for the model
deps=$("$PY" - <<'PYEOF'
import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(sorted({d.split(";")[0].strip() for d in deps if "python_version" not in d})))
PYEOF
)
"$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $plat -d "$DEST/whl" $deps httpx
du -sh "$DEST"
