#!/usr/bin/env python3
"""Write .safetensors and .npy files with Python (not difkern), then run the C
checker on them.  The safetensors file is laid out by hand with struct + json
the way the reference `safetensors` package does (header padded with spaces to
8 bytes, tensors sorted by alignment then name); bf16 comes from torch when it
is importable.  .npy files come from numpy.save.  Expected values go next to
them as raw little-endian float32 (<name>.f32), listed in manifest.txt.

Usage: gen_files.py <checker> <out dir>.  Exit 77 (skip) without numpy.
"""
import json
import os
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy not importable: skipping")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

checker, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
seed = int(os.environ.get("READERS_SEED", int.from_bytes(os.urandom(4), "little")))
print("gen_files.py: seed %d (READERS_SEED=%d reproduces), torch %s" % (seed, seed, "yes" if torch else "no"))
rng = np.random.default_rng(seed)
manifest = []


def expect_file(tag, values):
    path = os.path.join(out, tag + ".f32")
    np.asarray(values, dtype="<f4").tofile(path)
    return path


def bf16_bytes(x32):
    """float32 array -> (bf16 bytes, the values as float32)."""
    if torch is not None:
        t = torch.from_numpy(np.ascontiguousarray(x32)).to(torch.bfloat16)
        bits = t.view(torch.int16).numpy().astype("<i2")
        back = t.to(torch.float32).numpy()
    else:  # round to nearest even on the bits
        u = x32.astype("<f4").view("<u4").astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        bits = u.astype("<u2")
        back = (bits.astype(np.uint32) << 16).view("<f4")
    return bits.tobytes(), back


# ---- safetensors, by hand
tensors = {}  # name -> (dtype string, shape, bytes, expected float32 or None)
w = rng.standard_normal((3, 4)).astype("<f4")
tensors["decoder.conv_in.weight"] = ("F32", [3, 4], w.tobytes(), w)
h = (rng.standard_normal(5) * 100).astype("<f2")
tensors["decoder.conv_in.bias"] = ("F16", [5], h.tobytes(), h.astype(np.float32))
b = rng.standard_normal((2, 1, 3)).astype("<f4")
braw, bback = bf16_bytes(b)
tensors["caf\u00e9 \"q\""] = ("BF16", [2, 1, 3], braw, bback)
s = np.array(rng.standard_normal(), dtype="<f4")
tensors["scalar"] = ("F32", [], s.tobytes(), s.reshape(1))
ids = np.arange(3, dtype="<i8")
tensors["ids"] = ("I64", [3], ids.tobytes(), None)
tensors["empty"] = ("F16", [0, 2], b"", np.zeros(0, np.float32))

align = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8}
order = sorted(tensors, key=lambda n: (-align[tensors[n][0]], n))
header = {"__metadata__": {"format": "pt", "source": "gen_files.py"}}
offset = 0
for name in order:
    dt, shape, raw, _ = tensors[name]
    header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    offset += len(raw)
text = json.dumps(header, separators=(",", ":")).encode("utf-8")
text += b" " * ((8 - len(text) % 8) % 8)
st_path = os.path.join(out, "py.safetensors")
with open(st_path, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for name in order:
        f.write(tensors[name][2])
manifest.append(f"count\t{st_path}\t{len(tensors)}")
manifest.append(f"meta\t{st_path}\tformat\tpt")
for name, (dt, shape, raw, exp) in tensors.items():
    if exp is None:
        manifest.append(f"sterr\t{st_path}\t{name}\tDK_ERR_UNSUPPORTED\thas dtype {dt}")
        continue
    e = expect_file("st_%d" % len(manifest), exp)
    manifest.append("st\t%s\t%s\t%s\t%s\t%s" % (st_path, name, dt, " ".join(map(str, [len(shape)] + shape)), e))

# ---- .npy via numpy.save
arrays = {
    "f4": rng.standard_normal((2, 3, 4)).astype("<f4"),
    "f2": (rng.standard_normal(7) * 10).astype("<f2"),
    "f8": rng.standard_normal((3, 3)) * 1e5,
    "scalar": np.array(rng.standard_normal(), dtype="<f4"),
    "zero": np.zeros((0, 5), dtype="<f4"),
    "sliced": rng.standard_normal((4, 6)).astype("<f4")[:, ::2],  # non-contiguous view: saved in C order
}
for tag, a in arrays.items():
    p = os.path.join(out, tag + ".npy")
    np.save(p, a)
    e = expect_file("npy_" + tag, np.asarray(a).astype(np.float32).reshape(-1))
    manifest.append("npy\t%s\t%s\t%s" % (p, " ".join(map(str, [a.ndim] + list(a.shape))), e))
bad = {
    "fortran": (np.asfortranarray(rng.standard_normal((3, 4)).astype("<f4")), "DK_ERR_UNSUPPORTED", "fortran_order True"),
    "bigendian": (rng.standard_normal(4).astype(">f4"), "DK_ERR_UNSUPPORTED", "not little-endian"),
    "int32": (np.arange(4, dtype="<i4"), "DK_ERR_UNSUPPORTED", "'<i4' unsupported"),
    "sixdims": (np.zeros((1, 1, 1, 1, 2, 2), dtype="<f4"), "DK_ERR_UNSUPPORTED", "6 dims"),
    "structured": (np.zeros(2, dtype=[("a", "<f4")]), "DK_ERR_UNSUPPORTED", "structured"),
}
for tag, (a, status, msg) in bad.items():
    p = os.path.join(out, tag + ".npy")
    np.save(p, a)
    manifest.append(f"npyerr\t{p}\t{status}\t{msg}")

man_path = os.path.join(out, "manifest.txt")
with open(man_path, "w", encoding="utf-8") as f:
    f.write("\n".join(manifest) + "\n")
sys.exit(subprocess.call([checker, man_path]))
