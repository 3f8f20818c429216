#!/usr/bin/env bash
# The README's first command (after tools/install-deps.sh): build difkern in
# release mode and run the SDXL VAE decoder demo.  The demo decodes a seeded
# random latent with the full SDXL decoder architecture and seeded random
# weights on the default backend (NOT a real image), cross-checks it against
# every other backend present and a tiled decode, and writes sdxl_demo.png.
# Extra arguments go to `sdxl_decode --demo` (e.g. --size 16, --dtype bf16).
# Build folder: build-demo/ (BUILD_DIR overrides); JOBS sets ninja's -j.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-demo}
jobs=${JOBS:-$(nproc)}
[ -f "$build/build.ninja" ] || meson setup "$build" "$root" --buildtype=release >/dev/null
ninja -C "$build" -j"$jobs" examples/sdxl_decode/sdxl_decode
exec "$build/examples/sdxl_decode/sdxl_decode" --demo "$@"
