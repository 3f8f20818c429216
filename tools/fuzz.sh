#!/bin/sh
# Build the fuzz targets with clang + libFuzzer + ASan + UBSan and run each for a
# bounded time.  Fails (exit 1) on any finding: crash, sanitizer report, leak,
# timeout or out-of-memory.
#
#   tools/fuzz.sh [SECONDS [TARGET...]]
#
# SECONDS: per target, default 60.  TARGET: names from tests/fuzz/meson.build
# (default: all of FUZZ_TARGETS below).  Needs clang-14 (or $FUZZ_CC) and
# libclang-rt-14-dev.  Build dir: build-fuzz (or $FUZZ_BUILD_DIR).  Findings
# and the grown corpus are kept under $FUZZ_BUILD_DIR/fuzz-out/TARGET/; the
# seeds in tests/fuzz/corpus/TARGET/ are read, never written.
set -eu

FUZZ_TARGETS="validate safetensors npy"

secs=${1:-60}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && FUZZ_TARGETS="$*"

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cc=${FUZZ_CC:-clang-14}
jobs=${FUZZ_JOBS:-2}

if [ ! -f "$build/build.ninja" ]; then
    # Coverage instrumentation everywhere (library too), sanitizers that abort on the first report.
    CC=$cc meson setup "$build" "$root" \
        -Dbuildtype=debugoptimized -Ddefault_library=static -Db_sanitize=address,undefined \
        -Db_lundef=false -Dexamples=false -Dvulkan=disabled -Dhip=disabled \
        -Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all -fno-omit-frame-pointer" \
        >"${TMPDIR:-/tmp}/difkern-fuzz-setup.log" 2>&1 || { tail -20 "${TMPDIR:-/tmp}/difkern-fuzz-setup.log"; rm -rf "$build"; exit 1; }
    rm -f "${TMPDIR:-/tmp}/difkern-fuzz-setup.log"
fi
targets=""
for t in $FUZZ_TARGETS; do targets="$targets tests/fuzz/fuzz_$t"; done
ninja -C "$build" -j"$jobs" $targets >"$build/fuzz-build.log" 2>&1 || { tail -30 "$build/fuzz-build.log"; exit 1; }

# Fork mode keeps fuzzing after a finding, so one run reports every distinct
# problem it hits; any artifact written in this run is a failure.
status=0
for t in $FUZZ_TARGETS; do
    out="$build/fuzz-out/$t"
    rm -rf "$out/findings"
    mkdir -p "$out/corpus" "$out/findings"
    log="$out/fuzz.log"
    echo "fuzz_$t: ${secs}s"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/tests/fuzz/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/findings/" \
        "$out/corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1 || true
    # The last status line: "#RUNS: cov: .. ft: .. corp: .. exec/s: .. oom/timeout/crash: a/b/c time: ..s"
    grep -E "^#[0-9]+: cov:" "$log" | tail -1 | sed 's/^/  /'
    n=$(find "$out/findings" -type f | wc -l)
    if [ "$n" -gt 0 ] || ! grep -qE "^#[0-9]+: cov:" "$log"; then
        status=1
        echo "  FINDINGS in fuzz_$t: $n input(s) in $out/findings (log: $log)"
        # Replay each finding alone: its report and the first difkern frames of its stack.
        for f in $(find "$out/findings" -type f | head -10); do
            echo "  $f:"
            ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                "$build/tests/fuzz/fuzz_$t" "$f" 2>&1 |
                grep -E "^==[0-9]+==ERROR|runtime error|^ +#[0-9]+ .* in [a-z_0-9]+ .*\.\./(src|backends|tests)/" |
                sed -E 's/^==[0-9]+==/==/; s/^ +#[0-9]+ 0x[0-9a-f]+ in /      at /' | head -5 | sed 's/^/    /'
        done
    fi
done
exit $status
