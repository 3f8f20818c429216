"""Benchmark shape specs shared by torch_bench.py and compare.py.

A spec is an op name plus "key=value,..." parameters, the syntax dk_bench takes
on its command line (--op conv2d --shape n=1,cin=512,...).  The defaults and the
FLOP / byte counts here mirror tests/perf/bench_shapes.c; both programs write
every parameter, so specs compare as dictionaries.
"""

# op -> ordered (key, default); None means the key is required.
PARAMS = {
    "conv2d": [("n", 1), ("cin", None), ("cout", None), ("h", None), ("w", None),
               ("k", 3), ("s", 1), ("p", 0), ("d", 1), ("g", 1), ("up", 1),
               ("bias", 1), ("act", "none")],
    "conv_transpose2d": [("n", 1), ("cin", None), ("cout", None), ("h", None), ("w", None),
                         ("k", 3), ("s", 2), ("p", 1), ("op", 1), ("d", 1), ("g", 1),
                         ("bias", 1), ("act", "none")],
    "matmul": [("b", 1), ("m", None), ("n", None), ("k", None), ("bias", 1), ("act", "none")],
    "group_norm": [("n", 1), ("c", None), ("h", None), ("w", None), ("g", 32), ("act", "silu")],
    "layer_norm": [("rows", None), ("d", None), ("act", "none")],
    "attention": [("b", 1), ("h", 1), ("n", None), ("nkv", 0), ("d", None), ("dv", 0)],
    "add": [("n", 1), ("c", None), ("h", None), ("w", None), ("act", "none")],
    "convert": [("n", 1), ("c", None), ("h", None), ("w", None), ("to", "same"), ("tl", "other")],
    "upsample": [("n", 1), ("c", None), ("h", None), ("w", None), ("f", 2)],
    # videos [N, C, T, H, W]; layouts nchw / nhwc mean NCDHW / NDHWC.  form: l2 (the Wan
    # VAE's F.normalize(x, dim=1) * C**0.5, eps 1e-12) or ms (x * rsqrt(mean(x^2) + 1e-6))
    "rms_norm": [("n", 1), ("c", None), ("t", 1), ("h", None), ("w", None), ("form", "l2"), ("act", "none")],
    # a plain copy of the same video (dk_convert to the same dtype and layout)
    "copy": [("n", 1), ("c", None), ("t", 1), ("h", None), ("w", None)],
    # causal: pad_front kt-1, spatial padding k//2, t new frames after tc cached ones
    "conv3d": [("n", 1), ("cin", None), ("cout", None), ("t", None), ("h", None), ("w", None),
               ("kt", 3), ("k", 3), ("tc", 0), ("bias", 1), ("act", "none")],
}

STRING_KEYS = {"act", "to", "tl", "form"}
IMAGE_OPS = {"conv2d", "conv_transpose2d", "group_norm", "add", "convert", "upsample", "rms_norm", "copy", "conv3d"}
VIDEO_OPS = {"rms_norm", "copy"}
# Ops whose natural figure of merit is TFLOP/s (the rest: GB/s).
COMPUTE_OPS = {"conv2d", "conv_transpose2d", "matmul", "attention", "conv3d"}
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def layout_label(op, layout):
    """The layout as reports name it: conv3d's nchw / nhwc are NCDHW / NDHWC."""
    if op == "conv3d":
        return {"nchw": "ncdhw", "nhwc": "ndhwc"}.get(layout, layout)
    return layout


def default_layout(op):
    if op in IMAGE_OPS:
        return "nhwc"
    if op == "attention":
        return "bhnd"
    return "row"


def parse(op, text, dtype="bf16", layout=None):
    """Returns the full parameter dict of a spec, defaults filled in, relative
    values (nkv=0, dv=0, to=same, tl=other) resolved."""
    if op not in PARAMS:
        raise ValueError(f"unknown op '{op}' (known: {', '.join(PARAMS)})")
    given = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        if "=" not in item:
            raise ValueError(f"{op}: '{item}' is not key=value")
        k, v = item.split("=", 1)
        given[k.strip()] = v.strip()
    known = dict(PARAMS[op])
    for k in given:
        if k not in known:
            raise ValueError(f"{op}: unknown parameter '{k}' (known: {', '.join(known)})")
    p = {}
    for k, default in PARAMS[op]:
        if k in given:
            p[k] = given[k] if k in STRING_KEYS else int(given[k])
        elif default is None:
            raise ValueError(f"{op}: parameter '{k}' is required")
        else:
            p[k] = default
    layout = layout or default_layout(op)
    if op == "attention":
        p["nkv"] = p["nkv"] or p["n"]
        p["dv"] = p["dv"] or p["d"]
    if op == "convert":
        if p["to"] == "same":
            p["to"] = dtype
        if p["tl"] == "other":
            p["tl"] = "nchw" if layout == "nhwc" else "nhwc"
        elif p["tl"] == "same":
            p["tl"] = layout
    return p


def canonical(op, p):
    return ",".join(f"{k}={p[k]}" for k, _ in PARAMS[op])


def parse_spec_line(line):
    """'conv2d n=1,cin=...' (as `dk_bench --list` prints it) -> (op, text)."""
    parts = line.split()
    return parts[0], (parts[1] if len(parts) > 1 else "")


def conv_out(size, k, s, p, d, up=1):
    return (size * up + 2 * p - d * (k - 1) - 1) // s + 1


def convt_out(size, k, s, p, op, d):
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def cost(op, p, dtype):
    """(flops, bytes) of one op: useful multiply-adds x2, and the minimal
    memory traffic (every input read once, every output written once)."""
    e = DTYPE_BYTES[dtype]
    if op == "conv2d":
        oh = conv_out(p["h"], p["k"], p["s"], p["p"], p["d"], p["up"])
        ow = conv_out(p["w"], p["k"], p["s"], p["p"], p["d"], p["up"])
        flops = 2 * p["n"] * p["cout"] * oh * ow * (p["cin"] // p["g"]) * p["k"] ** 2
        elems = (p["n"] * p["cin"] * p["h"] * p["w"] + p["cout"] * (p["cin"] // p["g"]) * p["k"] ** 2
                 + p["n"] * p["cout"] * oh * ow + (p["cout"] if p["bias"] else 0))
        return flops, elems * e
    if op == "conv3d":
        oh, ow = p["h"] + 2 * (p["k"] // 2) - p["k"] + 1, p["w"] + 2 * (p["k"] // 2) - p["k"] + 1
        flops = 2 * p["n"] * p["cout"] * p["t"] * oh * ow * p["cin"] * p["kt"] * p["k"] ** 2
        elems = (p["n"] * p["cin"] * (p["t"] + p["tc"]) * p["h"] * p["w"] + p["cout"] * p["cin"] * p["kt"] * p["k"] ** 2
                 + p["n"] * p["cout"] * p["t"] * oh * ow + (p["cout"] if p["bias"] else 0))
        return flops, elems * e
    if op == "conv_transpose2d":
        oh = convt_out(p["h"], p["k"], p["s"], p["p"], p["op"], p["d"])
        ow = convt_out(p["w"], p["k"], p["s"], p["p"], p["op"], p["d"])
        flops = 2 * p["n"] * p["cin"] * p["h"] * p["w"] * (p["cout"] // p["g"]) * p["k"] ** 2
        elems = (p["n"] * p["cin"] * p["h"] * p["w"] + p["cin"] * (p["cout"] // p["g"]) * p["k"] ** 2
                 + p["n"] * p["cout"] * oh * ow + (p["cout"] if p["bias"] else 0))
        return flops, elems * e
    if op == "matmul":
        flops = 2 * p["b"] * p["m"] * p["n"] * p["k"]
        elems = p["b"] * (p["m"] * p["k"] + p["m"] * p["n"]) + p["k"] * p["n"] + (p["n"] if p["bias"] else 0)
        return flops, elems * e
    if op == "attention":
        bh = p["b"] * p["h"]
        flops = 2 * bh * p["n"] * p["nkv"] * (p["d"] + p["dv"])
        elems = bh * (p["n"] * p["d"] + p["nkv"] * p["d"] + p["nkv"] * p["dv"] + p["n"] * p["dv"])
        return flops, elems * e
    if op == "group_norm":
        numel = p["n"] * p["c"] * p["h"] * p["w"]
        return 8 * numel, (2 * numel + 2 * p["c"]) * e
    if op == "layer_norm":
        numel = p["rows"] * p["d"]
        return 8 * numel, (2 * numel + 2 * p["d"]) * e
    if op == "add":
        numel = p["n"] * p["c"] * p["h"] * p["w"]
        return 3 * numel, 3 * numel * e
    if op == "convert":
        numel = p["n"] * p["c"] * p["h"] * p["w"]
        return 0, numel * (e + DTYPE_BYTES[p["to"]])
    if op == "upsample":
        numel = p["n"] * p["c"] * p["h"] * p["w"]
        return 0, numel * e * (1 + p["f"] ** 2)
    if op in VIDEO_OPS:
        numel = p["n"] * p["c"] * p["t"] * p["h"] * p["w"]
        if op == "copy":
            return 0, 2 * numel * e
        return 4 * numel, (2 * numel + 2 * p["c"]) * e
    raise ValueError(op)
