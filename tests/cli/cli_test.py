#!/usr/bin/python3
"""The sdxl_decode command line under hostile input and failing outputs.

    cli_test.py SDXL_DECODE WORKDIR GROUP

GROUP args:      no decode: latent shapes (no double free), sizes checked in 64
                 bits, messages, input and output paths checked before the
                 weights load, PATH_MAX, pipes and devices, stb's size limit.
GROUP write:     decodes (seeded random weights, 2x2 latents, CPU backend): /dev/full,
                 a file-size limit (the old file stays whole), a symlink stays a
                 link, a batch streamed within a host-memory limit of one image.
GROUP nonfinite: NaN latents and a NaN result are errors; --allow-nonfinite
                 writes the image with a warning.

Every file is made here (numpy .npy, safetensors by hand).  Exit 0 when every
check passes; each failure is printed.
"""
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import threading

import numpy as np

EXE, WORK, GROUP = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
os.makedirs(WORK, exist_ok=True)
FAILURES = []


def check(cond, what, res=None):
    if cond:
        return
    detail = ""
    if res is not None:
        detail = "\n    rc %d\n    stdout: %s\n    stderr: %s" % (res[0], res[1][-600:], res[2][-1500:])
    FAILURES.append(what)
    print("FAIL: " + what + detail)


def run(*args, env=None, preexec=None, timeout=300):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([EXE] + list(args), capture_output=True, text=True, env=e, preexec_fn=preexec,
                       timeout=timeout, cwd=WORK)
    return p.returncode, p.stdout, p.stderr


def path(name):
    return os.path.join(WORK, name)


def save_npy(name, arr):
    np.save(path(name), arr)
    return path(name)


def save_st(name, dtype, shape, data=None, sparse_bytes=None):
    """A safetensors file with one tensor 'latents'; sparse_bytes: a file of that many
    data bytes made by truncate (no disk blocks, nothing read by the mapped open)."""
    nbytes = len(data) if data is not None else sparse_bytes
    header = json.dumps({"latents": {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path(name), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        if data is not None:
            f.write(data)
        else:
            f.truncate(8 + len(header) + nbytes)
    return path(name)


def not_crashed(res):
    return res[0] in (1, 2) and "AddressSanitizer" not in res[2] and "runtime error" not in res[2]


def lat(shape, value=None, seed=0):
    if value is None:
        return np.random.RandomState(seed).randn(*shape).astype(np.float32)
    return np.full(shape, value, np.float32)


DUMMY_VAE = path("dummy.safetensors")  # exists; never loaded by the cases that fail before the weights


def group_args():
    with open(DUMMY_VAE, "wb") as f:
        f.write(b"not loaded")
    ok = save_npy("ok.npy", lat((1, 4, 2, 2)))
    base = ["--vae", DUMMY_VAE, "--backend", "cpu"]

    # Defect 1: a wrong shape used to free the latents twice (glibc abort, rc 134).
    for name, arr in [("c3", lat((1, 3, 2, 2))), ("1d", lat((5,))), ("scalar", np.float32(1.0)),
                      ("b0", lat((0, 4, 2, 2))), ("h0", lat((1, 4, 0, 2)))]:
        f = save_npy("shape_%s.npy" % name, np.asarray(arr))
        r = run(*base, "--latent", f, "-o", path("o.png"))
        check(not_crashed(r) and "sdxl_decode: " in r[2], "shape %s: a clean failure" % name, r)
        check("out of memory" not in r[2], "shape %s: not 'out of memory'" % name, r)
        check("weights:" not in r[1], "shape %s: refused before the weights load" % name, r)
    r = run(*base, "--latent", path("shape_c3.npy"), "-o", path("o.png"))
    check("[N, 4, h, w]" in r[2] and "[1, 3, 2, 2]" in r[2], "shape message names the rule and the shape", r)

    # Defect 8: sizes.  0-size latents say so; an int64 dim past 2^31-1 is caught
    # before it is narrowed (a file of 0 bytes of data: one dim is 0).
    r = run(*base, "--latent", path("shape_b0.npy"), "-o", path("o.png"))
    check("size 0" in r[2], "0-size latents: says size 0", r)
    f = save_st("huge_dim.safetensors", "F32", [0, 4, 2 ** 32, 1], data=b"")
    r = run(*base, "--latent", f, "-o", path("o.png"))
    check(not_crashed(r) and "2^31-1" in r[2], "a dim over 2^31-1 is named", r)
    f = save_st("deep.safetensors", "F32", [1] * 8 + [4], data=b"\0" * 16)
    r = run(*base, "--latent", f, "-o", path("o.png"))
    check(not_crashed(r) and "9 dims" in r[2] and "dtype" not in r[2], "9 dims: says dims, not dtype", r)
    r = run(*base, "--latent", WORK, "-o", path("o.png"))
    check(not_crashed(r) and "is a directory" in r[2], "a directory input says so", r)
    r = run(*base, "--latent", ok, "-o", path("o.png"), "--max-memory", "0.0000001")
    check(r[0] == 2 and "less than one byte" in r[2], "--max-memory rounding to 0 is rejected", r)
    r = run("--random-weights", "--backend", "cpu", "--latent", ok, "-o", path("o.png"), "--max-host-memory", "1e-9")
    check(r[0] == 2, "--max-host-memory rounding to 0 is rejected", r)

    # Defect 8: the output path is checked before anything loads or decodes.
    r = run(*base, "--latent", ok, "-o", "/nonexistent-dir/x.png")
    check(not_crashed(r) and "No such file" in r[2] and "weights:" not in r[1], "missing output directory first", r)
    r = run(*base, "--latent", ok, "-o", WORK)
    check(not_crashed(r) and "directory" in r[2] and "weights:" not in r[1], "output is a directory", r)
    if os.geteuid() != 0:
        os.makedirs(path("ro"), exist_ok=True)
        os.chmod(path("ro"), 0o500)
        r = run(*base, "--latent", ok, "-o", path("ro/x.png"))
        check(not_crashed(r) and "Permission denied" in r[2], "read-only output directory", r)
        os.chmod(path("ro"), 0o700)

    # Defect 11: -o past PATH_MAX - 1 is an error (it used to be cut); -o naming an input.
    r = run(*base, "--latent", ok, "-o", "a" * 4100 + ".png")
    check(r[0] == 2 and "4095" in r[2], "-o longer than 4095 bytes", r)
    r = run(*base, "--latent", ok, "-o", DUMMY_VAE)
    check(not_crashed(r) and "input file" in r[2], "-o equal to --vae", r)
    os.makedirs(path("sub"), exist_ok=True)
    r = run(*base, "--latent", ok, "-o", os.path.join(WORK, "sub", "..", "ok.npy"))
    check(not_crashed(r) and "input file" in r[2], "-o naming --latent by another path (same inode)", r)
    if os.path.lexists(path("vae_link")):
        os.remove(path("vae_link"))
    os.symlink(DUMMY_VAE, path("vae_link"))
    r = run(*base, "--latent", ok, "-o", path("vae_link"))
    check(not_crashed(r) and "input file" in r[2], "-o a symlink to --vae", r)
    f = save_npy("b_1.npy", lat((2, 4, 2, 2)))
    r = run(*base, "--latent", f, "-o", path("b.npy"))
    check(not_crashed(r) and "input file" in r[2] and "b_1.npy" in r[2], "batch-expanded -o naming the input", r)
    long_dir = WORK
    while len(long_dir) < 4000:
        long_dir = os.path.join(long_dir, "d" * 200)
    f = save_npy("b2.npy", lat((2, 4, 2, 2)))
    r = run(*base, "--latent", f, "-o", long_dir + "/" + "x" * (4094 - len(long_dir) - 1))
    check(not_crashed(r) and "4096" in r[2], "batch-expanded -o past PATH_MAX", r)
    with open(DUMMY_VAE, "rb") as fh:
        check(fh.read() == b"not loaded", "the --vae file is untouched")

    # Defect 13: pipes and devices are read with a bound; a FIFO's contents are read.
    r = run(*base, "--latent", "/dev/zero", "-o", path("o.png"), env={"DIFKERN_IO_STREAM_LIMIT": "1000000"})
    check(not_crashed(r) and "not a regular file" in r[2], "/dev/zero latent: bounded read", r)
    fifo = path("fifo.npy")
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    src = path("shape_c3.npy")

    def feed():
        with open(fifo, "wb") as w, open(src, "rb") as s:
            w.write(s.read())

    t = threading.Thread(target=feed)
    t.start()
    r = run(*base, "--latent", fifo, "-o", path("o.png"))
    t.join()
    check(not_crashed(r) and "[1, 3, 2, 2]" in r[2], "a FIFO latent is read", r)

    # Defect 14: an image of 26760^2 pixels is over stb's int sizes: refused with
    # the size and the limit, before the (sparse, never read) elements are converted.
    f = save_st("big.safetensors", "BF16", [1, 4, 3345, 3345], sparse_bytes=2 * 4 * 3345 * 3345)
    r = run(*base, "--latent", f, "-o", path("o.png"))
    check(not_crashed(r) and "26760x26760" in r[2] and "900000000" in r[2], "26760^2 image: size and limit", r)
    # and the host-memory limit of one image
    f = save_npy("l8.npy", lat((1, 4, 8, 8)))
    r = run(*base, "--latent", f, "-o", path("o.png"), "--max-host-memory", "0.1")
    check(not_crashed(r) and "64x64" in r[2] and "limit is 104857 bytes" in r[2], "host-memory limit message", r)


def group_write():
    ok = save_npy("ok.npy", lat((1, 4, 2, 2)))
    base = ["--random-weights", "--backend", "cpu", "--latent", ok]

    # Defect 2: /dev/full used to print "wrote" and exit 0.
    r = run(*base, "-o", "/dev/full")
    check(r[0] == 1 and "No space left on device" in r[2] and "wrote" not in r[1], "-o /dev/full fails", r)

    # Defect 2: a file-size limit below the PNG's size: non-zero, the reason, the
    # existing file untouched, no temporary file left.
    old = path("old.png")
    with open(old, "wb") as f:
        f.write(b"OLD" * 10)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    r = run(*base, "-o", old, preexec=limit)
    check(r[0] == 1 and "File too large" in r[2], "file-size limit: non-zero exit with the reason", r)
    with open(old, "rb") as f:
        check(f.read() == b"OLD" * 10, "file-size limit: the old file is intact")
    check(not [n for n in os.listdir(WORK) if ".tmp" in n], "file-size limit: no temporary file left")

    # Defect 2 (and the atomic write): through a symlink the target is replaced,
    # the link stays a link; /dev/null takes the bytes.
    real, link = path("real.png"), path("link.png")
    with open(real, "wb") as f:
        f.write(b"REAL")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("real.png", link)
    r = run(*base, "-o", link)
    check(r[0] == 0, "write through a symlink", r)
    check(os.path.islink(link), "the symlink is still a link")
    with open(real, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "the link's target holds the PNG")

    # Defect 7: a batch is streamed: 3 images of 16x16 (about 7.4 KB each while
    # written) within a host-memory limit of 10 KB, which the whole batch exceeds.
    f = save_npy("batch.npy", lat((3, 4, 2, 2), seed=3))
    r = run("--random-weights", "--backend", "cpu", "--latent", f, "-o", path("batch.png"),
            "--max-host-memory", str(10000 / 1048576))
    check(r[0] == 0, "batch of 3 within a one-image host-memory limit", r)
    for i in range(3):
        p = path("batch_%d.png" % i)
        check(os.path.exists(p) and open(p, "rb").read(4) == b"\x89PNG", "batch image %d written" % i, r)


def group_nonfinite():
    # Defect 9: NaN/Inf latents gave a black PNG and exit 0.
    for name, value in [("nan", np.nan), ("inf", np.inf)]:
        f = save_npy("%s.npy" % name, lat((1, 4, 2, 2), value))
        out = path("%s.png" % name)
        r = run("--random-weights", "--backend", "cpu", "--latent", f, "-o", out)
        check(r[0] == 1 and "NaN or Inf" in r[2] and not os.path.exists(out), "%s latents: an error, no image" % name, r)
    # Finite latents too large for the decoder: the decoded image is NaN/Inf (fp16:
    # also after the fp32 fallback): an error too.
    f = save_npy("huge.npy", lat((1, 4, 2, 2), 3e38))
    for dtype in ["f32", "f16"]:
        out = path("huge_%s.png" % dtype)
        r = run("--random-weights", "--backend", "cpu", "--dtype", dtype, "--latent", f, "-o", out)
        check(r[0] == 1 and "decoded image" in r[2] and "NaN or Inf" in r[2] and not os.path.exists(out),
              "huge latents, %s: the non-finite result is an error" % dtype, r)
    # ... unless asked for: the image is written with a warning.
    out = path("huge_allowed.png")
    r = run("--random-weights", "--backend", "cpu", "--latent", f, "-o", out, "--allow-nonfinite")
    check(r[0] == 0 and "warning" in r[2] and os.path.exists(out), "--allow-nonfinite writes with a warning", r)


{"args": group_args, "write": group_write, "nonfinite": group_nonfinite}[GROUP]()
print("cli %s: %d failure(s)" % (GROUP, len(FAILURES)))
sys.exit(1 if FAILURES else 0)
