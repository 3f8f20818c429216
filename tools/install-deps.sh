#!/usr/bin/env bash
# Install every Debian package difkern's build, tests and demo need (Debian 12).
# Idempotent: apt-get skips what is already there.  Runs as root, or through sudo.
set -euo pipefail

packages=(
  # build
  build-essential g++ pkg-config meson ninja-build python3
  # Vulkan backend: headers, volk loader, shader compiler, SPIR-V tools
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  # Vulkan on CPU for the tests (lavapipe), validation layers, vulkaninfo
  mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  # tests/oracle and tests/perf/torch_bench.py: PyTorch (CPU) and numpy
  python3-torch python3-numpy
  # fuzzing (libFuzzer) and sanitizers
  clang-14 libclang-rt-14-dev
  # the demo's image writer
  libstb-dev
  # HIP backend: AMD code objects (hipcc/clang-15: gfx908/gfx90a/gfx940; clang-16:
  # gfx1100/gfx1101 WMMA) and their ISA checks (llvm-objdump)
  hipcc libamdhip64-dev rocm-device-libs clang-16 lld-16 llvm-16
)

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps.sh: not root and no sudo: cannot install ${packages[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${packages[@]}"
