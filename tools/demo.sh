#!/usr/bin/env bash
# The README's first command (after tools/install-deps.sh): build difkern in
# release mode, then on the best backend the machine has:
#   1. a real picture: the TAEF2 tiny autoencoder (real weights, models/taef2)
#      encodes and decodes tests/data/astronaut.png, writes the result next to it
#      (tests/data/astronaut_taef2.png) and prints the round trip's PSNR;
#   2. the full SDXL VAE decoder architecture with seeded random weights decodes
#      a seeded random latent (NOT a real image: the benchmark-sized work),
#      cross-checked against every other backend present and a tiled decode
#      (sdxl_demo.png).
# Extra arguments go to `sdxl_decode --demo` (e.g. --size 16, --dtype bf16).
# Build folder: build-demo/ (BUILD_DIR overrides); JOBS sets ninja's -j.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-demo}
jobs=${JOBS:-$(nproc)}
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" --buildtype=release >/dev/null
ninja -C "$build" -j"$jobs" examples/sdxl_decode/sdxl_decode examples/sdxl_decode/difkern-vae
"$build/examples/sdxl_decode/difkern-vae" roundtrip --vae "$root/models/taef2/taef2_encoder.safetensors" \
  --decoder "$root/models/taef2/taef2_decoder.safetensors" --image "$root/tests/data/astronaut.png" \
  -o "$root/tests/data/astronaut_taef2.png"
echo
exec "$build/examples/sdxl_decode/sdxl_decode" --demo "$@"
