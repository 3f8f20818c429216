#!/usr/bin/env bash
# The whole test suite, as CI runs it (after tools/install-deps.sh):
#   1. release build: every meson test but suite unvalidated (CPU case list, Vulkan case list on
#      lavapipe with the validation layer, validation rules, PyTorch oracle,
#      readers, VAE decoder, header-only install, benchmark smoke run, HIP checks)
#   2. ASan + UBSan build: the same unit tests, the whole CPU case list and the
#      quick Vulkan case list on lavapipe with the validation layer
#   3. ThreadSanitizer build: the thread tests on the CPU and Vulkan (lavapipe) backends
#   4. the fuzz targets, a bounded time each (FUZZ_SECONDS, default 60)
# Build folders: build-test/, build-asan/, build-tsan/, build-fuzz/ (delete them to start clean).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-60}
start=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - start )) s)"; }

step "release build and tests"
[ -f build-test/build.ninja ] || meson setup build-test --buildtype=release
ninja -C build-test -j"$jobs"
# (suite unvalidated: the Vulkan case list without the validation layer, which
# on lavapipe repeats cases-vulkan-validation's run: tests/harness/meson.build)
meson test -C build-test --print-errorlogs --num-processes 1 --no-suite unvalidated

step "sanitizer build (ASan + UBSan) and tests"
[ -f build-asan/build.ninja ] || meson setup build-asan --buildtype=debugoptimized \
  -Db_sanitize=address,undefined -Db_lundef=false -Dexamples=true
ninja -C build-asan -j"$jobs"
# Mesa's lavapipe (Debian 12's 22.3.6) keeps a one-time allocation of its device
# enumeration in a global and loses it when the Vulkan loader unloads the driver at
# vkDestroyInstance: LeakSanitizer then reports 128 bytes from an unknown module in
# every process that used Vulkan (a bare vkCreateInstance + vkEnumeratePhysicalDevices
# + vkDestroyInstance program does too).  Preloading the driver keeps it resident and
# the allocation reachable; the ASan runtime still provides malloc (no preloaded
# library defines it), so its link-order check is off.  Suite nosan: tests that
# run no difkern host code the release run did not (the ISA check reads code
# objects, header-only builds its own consumers, and cases-vulkan-validation runs
# cases-vulkan's cases with the layer on).
lvp=$(ls /usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -n 1 || true)
LD_PRELOAD=$lvp ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 1 --no-suite slow \
  --no-suite nosan

step "ThreadSanitizer build (CPU and Vulkan backends) and the thread tests"
# glibc's C11 thread calls are invisible to ThreadSanitizer: the test program links
# tests/threads/tsan_c11_threads.c, which routes them to pthreads; the CPU
# kernels' ifunc clones would run before the sanitizer starts, so they are off.
# Vulkan runs on lavapipe with an empty pipeline cache, so that its pipelines are
# built by the compile threads (backends/vulkan/vk_compile.c) while the callers record.
[ -f build-tsan/build.ninja ] || meson setup build-tsan --buildtype=debugoptimized -Db_sanitize=thread \
  -Dhip=disabled -Dexamples=false -Dc_args=-DDIFKERN_NO_TARGET_CLONES
ninja -C build-tsan -j"$jobs" tests/threads/test_threads
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/threads/test_threads cpu 4 3
tsan_cache=$(mktemp -d)
XDG_CACHE_HOME=$tsan_cache DIFKERN_VULKAN_DEVICE=lavapipe TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  build-tsan/tests/threads/test_threads vulkan 3 2
rm -rf "$tsan_cache"

step "fuzzing, ${fuzz_seconds} s per target"
tools/fuzz.sh "$fuzz_seconds"

step "all passed in $(( $(date +%s) - start )) s"
