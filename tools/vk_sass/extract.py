#!/usr/bin/env python3
"""Pull the GPU machine code out of a difkern Vulkan pipeline cache written by
NVIDIA's driver, for nvdisasm (CUDA toolkit) to disassemble.

Why: NVIDIA's Vulkan driver reports no pipeline internal representations, but
its pipeline cache data holds each compiled pipeline as a zstd frame whose
contents carry the raw SASS.  Observed layout (driver 580, H100): in each
decompressed frame, a 32-bit code size at byte 76; the code ends with its last
EXIT, a branch to itself and NOP padding.
Not a documented format: this is a diagnostic tool, checked against the
driver's own "Binary Size" statistic (DIFKERN_VULKAN_PIPELINE_STATS=1).

usage: extract.py CACHE.bin OUTDIR
       then on a machine with the CUDA toolkit: nvdisasm -b SM90 OUTDIR/pipeline_N.bin
Writes OUTDIR/pipeline_N.bin, one per frame that holds code.  Needs the zstd
command (Debian package zstd).
"""
import os
import struct
import subprocess
import sys

ZSTD_MAGIC = bytes([0x28, 0xB5, 0x2F, 0xFD])
SIZE_AT = 76
EXIT = bytes.fromhex("4d79000000000000")   # low half of SASS EXIT (sm_90)
BRA, NOP = 0x7947, 0x7918                    # low 16 bits of BRA and NOP


def code_end(raw):
    """Offset just past the NOPs (and branch) that follow the last EXIT, or -1."""
    i = raw.rfind(EXIT)
    if i < 0:
        return -1
    i += 16
    while i + 16 <= len(raw) and struct.unpack_from("<H", raw, i)[0] in (BRA, NOP):
        i += 16
    return i


def frames(data):
    i = data.find(ZSTD_MAGIC)
    while i >= 0:
        yield i
        i = data.find(ZSTD_MAGIC, i + 1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    os.makedirs(sys.argv[2], exist_ok=True)
    n = 0
    for off in frames(data):
        r = subprocess.run(["zstd", "-d", "-c", "-q"], input=data[off:], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        raw = r.stdout
        if len(raw) < SIZE_AT + 4:
            continue
        size = struct.unpack_from("<I", raw, SIZE_AT)[0]
        end = code_end(raw)
        code = raw[end - size:end] if 0 <= end - size else b""
        if size % 16 or len(code) != size:
            print(f"frame at {off}: {len(raw)} bytes, no code found (size field {size})")
            continue
        path = os.path.join(sys.argv[2], f"pipeline_{n}.bin")
        open(path, "wb").write(code)
        print(f"frame at {off}: {size} bytes of code -> {path}")
        n += 1


if __name__ == "__main__":
    main()
