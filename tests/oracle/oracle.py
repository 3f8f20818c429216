#!/usr/bin/env python3
"""difkern's CPU backend against PyTorch, an implementation nobody here wrote.

For every case: random inputs are drawn with torch (seeded, the seed is printed),
rounded to the case's dtype, placed in buffers with the case's layout (NCHW/NHWC
or other strides, a nonzero offset, NaN in every element outside the view) and
written for tests/oracle/oracle_ops.c, which runs all cases through difkern's
public API on the CPU backend.  The reference is torch in float64 on the same
dtype-rounded inputs.  Numeric ops pass when ||out - ref|| / ||ref|| is within a
per-dtype tolerance (the output's rounding plus fp32 accumulation growing with
the reduction length); data movement (upsample, layout conversion) and dtype
conversion must match bit for bit.  Every case also checks that the op wrote no
element outside its output view and left no NaN inside it.

    /usr/bin/python3 oracle.py --runner build/tests/oracle/oracle_ops [--seed N] [--filter STR]

Exit status: 0 all passed, 1 a failure, 77 skipped (no torch in this python).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"oracle: SKIP: needs PyTorch and numpy in this python ({sys.executable}): {e}. "
          "Install Debian's python3-torch and run with /usr/bin/python3.")
    sys.exit(77)

TORCH_DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
INT_DT = {"f32": torch.int32, "f16": torch.int16, "bf16": torch.int16}
NP_INT = {"f32": np.int32, "f16": np.int16, "bf16": np.int16}
NAN_BITS = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
DTYPES = ["f32", "f16", "bf16"]
ACT = {"none": 0, "relu": 1, "silu": 2, "gelu": 3, "gelu_tanh": 4, "tanh": 5}
# Unit roundoff of each output dtype; accumulation is fp32 (or wider).
UNIT = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
ACC_UNIT = 2.0 ** -24


def tolerance(dt, k, cond=1.0):
    """Relative L2 bound: twice the output rounding, plus fp32 accumulation
    error that grows like sqrt(reduction length), plus a few ulps of fp32 for
    transcendental functions.  cond: for normalizations, |mean| / std of the
    input: fp32 statistics lose about cond ulps in x - mean even when computed
    stably (a one-pass E[x^2] - E[x]^2 loses about cond^2, and still fails).
    For attention, cond is the RMS magnitude of the scaled logits: fp32 rounds a
    logit s by about |s| ulps and exp carries that into the weights."""
    return 2.0 * UNIT[dt] + 4.0 * ACC_UNIT * math.sqrt(max(k, 1)) + 32.0 * ACC_UNIT + 4.0 * ACC_UNIT * cond


def act_ref(name, x):
    if name == "none":
        return x
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    if name == "gelu":
        return F.gelu(x)
    if name == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if name == "tanh":
        return torch.tanh(x)
    raise ValueError(name)


def f32(v):
    """The float32 value difkern will see for a float parameter."""
    return float(np.float32(v))


def rnd(t, dt):
    """Round a float tensor to dtype dt and return it as float64."""
    return t.to(TORCH_DT[dt]).to(torch.float64)


# ------------------------------------------------------------------- layouts

def order_for(layout, ndim):
    """Storage order of the dims, outermost first."""
    if ndim == 4 and layout in ("nhwc", "nhwc_gap"):
        return [0, 2, 3, 1]
    if ndim == 4 and layout == "bnhd":
        return [0, 2, 1, 3]
    if ndim == 5 and layout == "ndhwc":
        return [0, 2, 3, 4, 1]
    if ndim == 5 and layout == "bnhd":  # [B, B2, H, N, D] stored [B, B2, N, H, D]
        return [0, 1, 3, 2, 4]
    if ndim == 5 and layout == "frames_ncdhw":  # [B, T, 1, N, D] of an NCDHW video [B, D, T, N]
        return [0, 4, 1, 2, 3]
    if ndim >= 2 and layout == "T":
        o = list(range(ndim))
        o[-1], o[-2] = o[-2], o[-1]
        return o
    if ndim >= 2 and layout == "perm":
        return list(reversed(range(ndim)))
    return list(range(ndim))


def strides_for(shape, order, gap):
    """Element strides for shape stored in order, with gap elements after each
    innermost row."""
    st = [0] * len(shape)
    acc = 1
    for i, d in enumerate(reversed(order)):
        st[d] = acc
        acc *= shape[d]
        if i == 0:
            acc += gap
    return st


def broadcast_dims(layout, ndim):
    """Dims stored with stride 0 (an input broadcast along them)."""
    if layout == "bcast_hw" and ndim == 4:
        return [2, 3]
    if layout == "bcast_batch" and ndim == 3:
        return [0]
    return []


class Placement:
    def __init__(self, shape, dt, layout, blob_off, offset=0, gap=0):
        self.shape = list(shape)
        self.dt = dt
        self.zero_dims = broadcast_dims(layout, len(shape))
        stored = [1 if d in self.zero_dims else n for d, n in enumerate(self.shape)]
        self.strides = strides_for(stored, order_for(layout, len(shape)), gap if len(shape) > 1 else 0)
        for d in self.zero_dims:
            self.strides[d] = 0
        self.offset = offset
        last = sum((s - 1) * st for s, st in zip(self.shape, self.strides))
        self.bufelems = offset + last + 1 + 2  # two poisoned elements after the view
        self.blob_off = blob_off

    def line(self, kind, role):
        f = [kind, role, self.dt, str(len(self.shape))] + [str(s) for s in self.shape] + \
            [str(s) for s in self.strides] + [str(self.offset), str(self.bufelems), str(self.blob_off)]
        return " ".join(f)

    def nbytes(self):
        return self.bufelems * ESIZE[self.dt]

    def view(self, buf):
        return buf.as_strided(self.shape, self.strides, self.offset)

    def store(self, buf, bits):
        """Writes bits (logical shape) into buf; broadcast dims keep index 0
        (the caller's values are constant along them)."""
        shape = list(self.shape)
        for d in self.zero_dims:
            bits = bits.narrow(d, 0, 1)
            shape[d] = 1
        buf.as_strided(shape, self.strides, self.offset).copy_(bits)

    def outside_mask(self):
        m = torch.ones(self.bufelems, dtype=torch.bool)
        self.view(m).fill_(False)
        return m


def layout_params(layout, rng_offset):
    """(offset, gap) of a tensor in this layout: the *_gap layouts pad rows and
    start at an odd element, the others start at a small random offset."""
    if layout.endswith("_gap"):
        return 5, 3
    return rng_offset, 0


# --------------------------------------------------------------------- cases

class Case:
    def __init__(self, op, spec, dt, layout, params=None):
        self.op = op
        self.name = f"{op}.{spec}.{dt}.{layout}"
        self.spec, self.dt, self.layout = spec, dt, layout
        self.params = dict(params or {})
        self.inputs = []       # (role, bits tensor, dt, layout)
        self.out = None        # (role, shape, dt, layout)
        self.alias = None      # (role, input role) for in-place cases
        self.ref = None        # float64 reference, logical shape
        self.exact = False     # bitwise comparison
        self.k = 1             # reduction length, for the tolerance
        self.cond = 1.0        # normalizations: |mean| / std of the input; attention: RMS scaled logit (tolerance)
        self.note = ""

    def input(self, role, values, layout=None, dt=None, bits=None):
        """values: float64 already rounded to dt (or bits: raw integer bits)."""
        dt = dt or self.dt
        if bits is None:
            bits = values.to(TORCH_DT[dt]).view(INT_DT[dt])
        self.inputs.append((role, bits.contiguous(), dt, layout or self.layout))

    def output(self, role, shape, layout=None, dt=None):
        self.out = (role, list(shape), dt or self.dt, layout or self.layout)


class Gen:
    """Seeded random tensors rounded to a dtype."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, shape, dt, scale=1.0):
        return rnd(torch.randn(*shape, generator=self.g, dtype=torch.float64) * scale, dt)

    def rand_int(self, lo, hi):
        return int(torch.randint(lo, hi, (1,), generator=self.g))

    def bits(self, n, dt):
        if dt == "f32":
            return torch.randint(-2 ** 31, 2 ** 31, (n,), generator=self.g, dtype=torch.int64).to(torch.int32)
        return torch.randint(-2 ** 15, 2 ** 15, (n,), generator=self.g, dtype=torch.int64).to(torch.int16)


def epilogue_ref(acc, bias, res, p, bias_dim):
    """out = post_act(output_scale * act(acc + bias) + residual_scale * residual)."""
    if bias is not None:
        shape = [1] * acc.dim()
        shape[bias_dim] = -1
        acc = acc + bias.view(shape)
    out = f32(p.get("output_scale", 1.0)) * act_ref(p.get("act_name", "none"), acc)
    if res is not None:
        out = out + f32(p.get("residual_scale", 1.0)) * res
    return act_ref(p.get("post_act_name", "none"), out)


def set_act(params):
    p = dict(params)
    p["act_name"] = p.pop("act", "none")
    p["post_act_name"] = p.pop("post_act", "none")
    return p


def c_params(p):
    out = {k: v for k, v in p.items()
           if k not in ("act_name", "post_act_name", "bias", "residual", "bcast_b", "res_inplace", "f32_bias")}
    out["act"] = ACT[p.get("act_name", "none")]
    out["post_act"] = ACT[p.get("post_act_name", "none")]
    return out


def sides_of(p):
    """conv2d's padding (left, right, top, bottom): the per-side parameters where given."""
    if "pad_top" in p:
        return (p["pad_left"], p["pad_right"], p["pad_top"], p["pad_bottom"])
    return (p.get("pad_w", 0), p.get("pad_w", 0), p.get("pad_h", 0), p.get("pad_h", 0))


IMG_LAYOUTS = ["nchw", "nhwc"]
VIDEO_LAYOUTS = ["ncdhw", "ndhwc"]


def conv_cases(gen):
    specs = [
        # name, N, Cin, H, W, Cout, KH, KW, params
        ("k3p1_bias", 2, 8, 9, 7, 12, 3, 3, dict(pad_h=1, pad_w=1, bias=1)),
        ("k3s2_silu", 1, 6, 11, 10, 8, 3, 3, dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, bias=1, act="silu")),
        ("dil2_relu", 1, 6, 11, 10, 5, 3, 3, dict(dilation_h=2, dilation_w=2, pad_h=2, pad_w=2, act="relu")),
        ("groups4_gelu", 2, 8, 6, 7, 12, 3, 3, dict(groups=4, pad_h=1, pad_w=1, bias=1, act="gelu")),
        ("depthwise", 1, 8, 7, 6, 8, 3, 3, dict(groups=8, pad_h=1, pad_w=1, bias=1)),
        ("up2_silu", 2, 6, 5, 6, 7, 3, 3, dict(upsample=2, pad_h=1, pad_w=1, bias=1, act="silu")),
        ("residual_tanh", 1, 8, 6, 6, 8, 3, 3,
         dict(pad_h=1, pad_w=1, bias=1, residual=1, act="tanh", output_scale=0.5, residual_scale=0.75)),
        ("k1_res_gelutanh", 2, 16, 5, 4, 12, 1, 1,
         dict(bias=1, residual=1, act="gelu_tanh", output_scale=1.25, residual_scale=-0.5)),
        ("asym", 1, 4, 9, 8, 6, 3, 2, dict(stride_h=2, stride_w=1, pad_h=1, pad_w=0, dilation_h=1, dilation_w=2,
                                            bias=1)),
        ("up2_g2_s2_res", 1, 8, 5, 4, 6, 3, 3,
         dict(upsample=2, groups=2, stride_h=2, stride_w=2, pad_h=1, pad_w=1, residual=1, output_scale=0.7,
              residual_scale=1.3)),
        ("prepared_k288", 1, 32, 8, 8, 16, 3, 3, dict(pad_h=1, pad_w=1, bias=1, prepare=1)),
        ("k576_nopad", 1, 64, 6, 6, 8, 3, 3, dict(bias=1, act="silu")),
        ("pad3_k3", 1, 4, 5, 5, 6, 3, 3, dict(pad_h=3, pad_w=3, bias=1)),
        ("stride3_k1", 2, 6, 10, 8, 5, 1, 1, dict(stride_h=3, stride_w=3, bias=1)),
        ("k5_on_3x3_cout1", 3, 3, 3, 3, 1, 5, 5, dict(pad_h=2, pad_w=2, bias=1)),
        ("up2_k1", 1, 4, 3, 5, 6, 1, 1, dict(upsample=2, act="relu")),
        ("up2_dil2_nopad", 1, 3, 4, 4, 4, 3, 3, dict(upsample=2, dilation_h=2, dilation_w=2, bias=1)),
        ("vae_like_k1152", 1, 128, 16, 16, 64, 3, 3, dict(pad_h=1, pad_w=1, bias=1, residual=1)),
        # the weight buffer is re-uploaded between two runs: a cached prepared weight must not survive
        ("reupload_prepared", 1, 8, 6, 5, 8, 3, 3, dict(pad_h=1, pad_w=1, bias=1, prepare=1, reupload=1)),
        # padding per side (F.pad, then an unpadded conv): the VAE encoder's downsampler (0 top/left,
        # 1 bottom/right, 3x3 stride 2), top > bottom with a 4-wide kernel, pad_h given equal to pad_top,
        # and the fused upsample with the sides applied to the upsampled input
        ("pad_0101_s2", 2, 8, 9, 8, 12, 3, 3,
         dict(stride_h=2, stride_w=2, pad_top=0, pad_bottom=1, pad_left=0, pad_right=1, bias=1)),
        ("pad_2103_k3x4_res", 1, 6, 7, 6, 5, 3, 4,
         dict(pad_top=2, pad_bottom=1, pad_left=0, pad_right=3, bias=1, residual=1, act="silu")),
        ("pad_h1_sides_1011", 1, 8, 6, 5, 8, 3, 3,
         dict(pad_h=1, pad_top=1, pad_bottom=0, pad_left=1, pad_right=1, bias=1)),
        ("up2_pad_1002", 1, 6, 5, 6, 7, 3, 3,
         dict(upsample=2, pad_top=1, pad_bottom=0, pad_left=0, pad_right=2, bias=1, act="gelu")),
        # the activation after the residual (TAESD: relu(conv(x) + x)), the residual as y's own view
        ("post_relu_res", 1, 16, 8, 7, 16, 3, 3, dict(pad_h=1, pad_w=1, bias=1, residual=1, post_act="relu")),
        ("post_tanh_res_inplace", 2, 8, 6, 5, 12, 3, 3,
         dict(pad_h=1, pad_w=1, bias=1, residual=1, res_inplace=1, act="silu", post_act="tanh",
              output_scale=0.5, residual_scale=-0.75)),
        ("post_gelu_nores", 1, 8, 5, 6, 8, 1, 1, dict(bias=1, act="relu", post_act="gelu")),
        # an f32 bias whatever the dtype of x
        ("f32_bias_silu", 1, 8, 6, 5, 12, 3, 3, dict(pad_h=1, pad_w=1, bias=1, f32_bias=1, act="silu")),
    ]
    cases = []
    for name, n, cin, h, w, cout, kh, kw, params in specs:
        for dt in DTYPES:
            layouts = IMG_LAYOUTS + (["nhwc_gap"] if name == "k3p1_bias" else [])
            for lay in layouts:
                p = set_act(params)
                g = p.get("groups", 1)
                c = Case("conv2d", name, dt, lay, c_params(p))
                x = gen.randn([n, cin, h, w], dt)
                wt = gen.randn([cout, cin // g, kh, kw], dt, 1.0 / math.sqrt(cin // g * kh * kw))
                c.input("w", wt)
                if p.get("reupload"):
                    wt = gen.randn(list(wt.shape), dt, 1.0 / math.sqrt(cin // g * kh * kw))
                    c.input("w2", wt)
                bdt = "f32" if p.get("f32_bias") else dt
                bias = gen.randn([cout], bdt) if p.get("bias") else None
                xin = F.interpolate(x, scale_factor=2, mode="nearest") if p.get("upsample", 1) == 2 else x
                acc = F.conv2d(F.pad(xin, sides_of(p)), wt, None, (p.get("stride_h", 1), p.get("stride_w", 1)),
                               0, (p.get("dilation_h", 1), p.get("dilation_w", 1)), g)
                res = gen.randn(list(acc.shape), dt) if p.get("residual") else None
                c.input("x", x)
                if bias is not None:
                    c.input("bias", bias, "contig", dt=bdt)
                if res is not None:
                    c.input("residual", res)
                c.output("y", acc.shape)
                if p.get("res_inplace"):
                    c.alias = ("y", "residual")
                c.ref = epilogue_ref(acc, bias, res, p, 1)
                c.k = cin // g * kh * kw
                cases.append(c)
    return cases


def conv_transpose_cases(gen):
    specs = [
        # name, N, Cin, H, W, Cout, KH, KW, params
        ("s2k3p1op1_bias", 2, 8, 5, 6, 6, 3, 3,
         dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, output_padding_h=1, output_padding_w=1, bias=1)),
        ("s2k4p1_silu", 1, 6, 4, 5, 8, 4, 4, dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, bias=1, act="silu")),
        ("s2d2op1", 1, 5, 5, 4, 4, 3, 3,
         dict(stride_h=2, stride_w=2, dilation_h=2, dilation_w=2, pad_h=1, pad_w=1, output_padding_h=1,
              output_padding_w=1)),
        ("g2_s2_res_gelu", 2, 8, 4, 4, 6, 3, 3,
         dict(groups=2, stride_h=2, stride_w=2, output_padding_h=1, output_padding_w=1, bias=1, residual=1,
              act="gelu", output_scale=0.5, residual_scale=1.5)),
        ("s1k3p1", 1, 7, 6, 5, 9, 3, 3, dict(pad_h=1, pad_w=1, bias=1, act="relu")),
        ("asym_s23", 1, 4, 4, 5, 6, 3, 2,
         dict(stride_h=2, stride_w=3, pad_h=0, pad_w=1, output_padding_h=1, output_padding_w=2, bias=1)),
        ("vae_up_k576", 1, 64, 8, 8, 32, 3, 3,
         dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, output_padding_h=1, output_padding_w=1, bias=1)),
        ("pad2_k3_s2", 1, 4, 5, 5, 3, 3, 3, dict(stride_h=2, stride_w=2, pad_h=2, pad_w=2, bias=1)),
        ("1x1_input_k4s2", 2, 5, 1, 1, 4, 4, 4, dict(stride_h=2, stride_w=2, act="silu")),
        ("reupload_prepared", 1, 6, 4, 4, 4, 3, 3,
         dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, output_padding_h=1, output_padding_w=1, prepare=1,
              reupload=1)),
        ("s3k2op2_d2", 1, 6, 3, 4, 4, 2, 3,
         dict(stride_h=3, stride_w=1, dilation_h=1, dilation_w=2, output_padding_h=2, output_padding_w=1,
              act="tanh", prepare=1)),
        ("post_relu_res_inplace", 1, 8, 4, 5, 6, 3, 3,
         dict(stride_h=2, stride_w=2, pad_h=1, pad_w=1, output_padding_h=1, output_padding_w=1, bias=1,
              residual=1, res_inplace=1, act="silu", post_act="relu")),
    ]
    cases = []
    for name, n, cin, h, w, cout, kh, kw, params in specs:
        for dt in DTYPES:
            layouts = IMG_LAYOUTS + (["nhwc_gap"] if name == "s2k3p1op1_bias" else [])
            for lay in layouts:
                p = set_act(params)
                g = p.get("groups", 1)
                c = Case("conv_transpose2d", name, dt, lay, c_params(p))
                x = gen.randn([n, cin, h, w], dt)
                wt = gen.randn([cin, cout // g, kh, kw], dt, 1.0 / math.sqrt(cin // g * kh * kw))
                c.input("w", wt)
                if p.get("reupload"):
                    wt = gen.randn(list(wt.shape), dt, 1.0 / math.sqrt(cin // g * kh * kw))
                    c.input("w2", wt)
                bias = gen.randn([cout], dt) if p.get("bias") else None
                acc = F.conv_transpose2d(x, wt, None, (p.get("stride_h", 1), p.get("stride_w", 1)),
                                         (p.get("pad_h", 0), p.get("pad_w", 0)),
                                         (p.get("output_padding_h", 0), p.get("output_padding_w", 0)), g,
                                         (p.get("dilation_h", 1), p.get("dilation_w", 1)))
                res = gen.randn(list(acc.shape), dt) if p.get("residual") else None
                c.input("x", x)
                if bias is not None:
                    c.input("bias", bias, "contig")
                if res is not None:
                    c.input("residual", res)
                c.output("y", acc.shape)
                if p.get("res_inplace"):
                    c.alias = ("y", "residual")
                c.ref = epilogue_ref(acc, bias, res, p, 1)
                c.k = cin // g * kh * kw
                cases.append(c)
    return cases


def conv3d_cases(gen):
    """dk_conv3d / dk_conv3d_chunk against F.conv3d: the causal front padding by F.pad, the
    cache by torch.cat in front of x (the NDHWC weight is stored [O, KT, KH, KW, I])."""
    specs = [
        # name, N, Cin, T, H, W, Cout, KT, KH, KW, Tc (cache frames), params
        ("causal333_bias", 1, 8, 4, 5, 6, 8, 3, 3, 3, 0,
         dict(pad_front=2, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, bias=1)),
        ("causal333_cache2_silu", 1, 12, 3, 4, 5, 16, 3, 3, 3, 2,
         dict(pad_front=2, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, bias=1, act="silu")),
        ("causal333_cache1_t1_res", 2, 5, 1, 4, 4, 6, 3, 3, 3, 1,
         dict(pad_front=2, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, bias=1, residual=1)),
        ("time311_cache2", 1, 6, 1, 3, 4, 12, 3, 1, 1, 2, dict(pad_front=2, bias=1, f32_bias=1)),
        ("time311_cache1_inplace", 1, 8, 4, 3, 3, 8, 3, 1, 1, 1,
         dict(pad_front=2, residual=1, res_inplace=1, post_act="relu")),
        ("point111_gelu", 1, 7, 3, 4, 4, 9, 1, 1, 1, 0, dict(bias=1, act="gelu")),
        ("s2_dil_groups", 1, 8, 7, 7, 6, 6, 3, 3, 2, 0,
         dict(stride_t=2, stride_h=2, stride_w=1, dilation_t=2, dilation_w=2, groups=2, pad_front=3, pad_back=1,
              pad_top=1, pad_bottom=0, pad_left=0, pad_right=2, bias=1, output_scale=0.5, residual_scale=1.5,
              residual=1)),
    ]
    cases = []
    for name, n, cin, t, h, w, cout, kt, kh, kw, tc, params in specs:
        for dt in DTYPES:
            for lay in VIDEO_LAYOUTS:
                p = set_act(params)
                g = p.get("groups", 1)
                c = Case("conv3d", name, dt, lay, c_params(p))
                x = gen.randn([n, cin, t, h, w], dt)
                cache = gen.randn([n, cin, tc, h, w], dt) if tc else None
                wt = gen.randn([cout, cin // g, kt, kh, kw], dt, 1.0 / math.sqrt(cin // g * kt * kh * kw))
                bdt = "f32" if p.get("f32_bias") else dt
                bias = gen.randn([cout], bdt) if p.get("bias") else None
                xin = torch.cat([cache, x], 2) if cache is not None else x
                xin = F.pad(xin, (p.get("pad_left", 0), p.get("pad_right", 0), p.get("pad_top", 0),
                                  p.get("pad_bottom", 0), p.get("pad_front", 0) - tc, p.get("pad_back", 0)))
                acc = F.conv3d(xin, wt, None, (p.get("stride_t", 1), p.get("stride_h", 1), p.get("stride_w", 1)), 0,
                               (p.get("dilation_t", 1), p.get("dilation_h", 1), p.get("dilation_w", 1)), g)
                res = gen.randn(list(acc.shape), dt) if p.get("residual") else None
                c.input("x", x)
                c.input("w", wt)
                if cache is not None:
                    c.input("cache", cache)
                if bias is not None:
                    c.input("bias", bias, "contig", dt=bdt)
                if res is not None:
                    c.input("residual", res)
                c.output("y", acc.shape)
                if p.get("res_inplace"):
                    c.alias = ("y", "residual")
                c.ref = epilogue_ref(acc, bias, res, p, 1)
                c.k = cin // g * kt * kh * kw
                cases.append(c)
    return cases


def group_norm_cases(gen):
    specs = [
        # name, N, C, H, W, groups, affine, act, eps, in_place, mean of x
        ("g8_affine", 2, 32, 5, 6, 8, True, "none", 1e-5, False, 0.5),
        ("g32_silu", 1, 64, 4, 4, 32, True, "silu", 1e-6, False, 0.5),
        ("g4_noaffine_gelu", 2, 12, 3, 5, 4, False, "gelu", 1e-5, False, 0.5),
        ("g8_inplace_silu", 1, 16, 6, 5, 8, True, "silu", 1e-5, True, 0.5),
        ("g1_tanh", 2, 6, 4, 3, 1, True, "tanh", 1e-3, False, 0.5),
        # mean 300 / std 2: E[x^2] - E[x]^2 in fp32 would lose the variance
        ("large_mean", 1, 16, 6, 6, 4, True, "none", 1e-5, False, 300.0),
        ("vae_like_g32", 1, 128, 16, 16, 32, True, "silu", 1e-6, False, 0.5),
        # affine "f32": gamma and beta in f32 whatever the dtype of x
        ("g8_f32affine_silu", 2, 32, 5, 6, 8, "f32", "silu", 1e-5, False, 0.5),
    ]
    cases = []
    for name, n, ch, h, w, groups, affine, act, eps, in_place, mean in specs:
        for dt in DTYPES:
            layouts = IMG_LAYOUTS + (["nhwc_gap"] if name == "g8_affine" else [])
            for lay in layouts:
                c = Case("group_norm", name, dt, lay, dict(groups=groups, eps=eps, act=ACT[act]))
                x = rnd(gen.randn([n, ch, h, w], dt, 2.0) + mean, dt)
                adt = "f32" if affine == "f32" else dt
                gamma = gen.randn([ch], adt) if affine else None
                beta = gen.randn([ch], adt) if affine else None
                c.input("x", x)
                if affine:
                    c.input("gamma", gamma, "contig", dt=adt)
                    c.input("beta", beta, "contig", dt=adt)
                if in_place:
                    c.alias = ("y", "x")
                else:
                    c.output("y", x.shape)
                c.ref = act_ref(act, F.group_norm(x, groups, gamma, beta, f32(eps)))
                c.k = ch // groups * h * w
                c.cond = max(1.0, abs(mean) / 2.0)
                cases.append(c)
    # videos [N, C, T, H, W]: statistics over the group's channels and all frames
    for name, n, ch, t, h, w, groups, act in [("video_g4_silu", 1, 16, 3, 4, 5, 4, "silu"),
                                              ("video_b2_g2", 2, 8, 2, 3, 3, 2, "none")]:
        for dt in DTYPES:
            for lay in VIDEO_LAYOUTS:
                c = Case("group_norm", name, dt, lay, dict(groups=groups, eps=1e-6, act=ACT[act]))
                x = rnd(gen.randn([n, ch, t, h, w], dt, 2.0) + 0.5, dt)
                gamma, beta = gen.randn([ch], dt), gen.randn([ch], dt)
                c.input("x", x)
                c.input("gamma", gamma, "contig")
                c.input("beta", beta, "contig")
                c.output("y", x.shape)
                c.ref = act_ref(act, F.group_norm(x, groups, gamma, beta, f32(1e-6)))
                c.k = ch // groups * t * h * w
                cases.append(c)
    return cases


def group_norm_split_cases(gen):
    """The split GroupNorm: dk_group_norm_stats against torch.var_mean, and
    dk_group_norm_apply with given (mean, variance) against the formula."""
    specs = [
        # name, N, C, H, W, groups, affine, act, mean of x
        ("g8", 2, 32, 5, 6, 8, True, "silu", 0.5),
        ("large_mean_g4", 1, 16, 6, 6, 4, False, "none", 300.0),
    ]
    cases = []
    for name, n, ch, h, w, groups, affine, act, mean in specs:
        for dt in DTYPES:
            for lay in IMG_LAYOUTS:
                x = rnd(gen.randn([n, ch, h, w], dt, 2.0) + mean, dt)
                var, mu = torch.var_mean(x.reshape(n, groups, -1), dim=2, unbiased=False)
                c = Case("group_norm_stats", name, dt, lay, dict(groups=groups))
                c.input("x", x)
                c.output("stats", [n, groups, 2], "contig", "f32")
                c.ref = torch.stack([mu, var], dim=2)
                c.k = ch // groups * h * w
                c.cond = max(1.0, abs(mean) / 2.0)
                cases.append(c)
                # apply: statistics of a shifted copy, so a kernel that ignores them fails
                c = Case("group_norm_apply", name, dt, lay, dict(groups=groups, eps=1e-5, act=ACT[act]))
                st = torch.stack([mu + 0.25, var * 1.5], dim=2).to(torch.float32).to(torch.float64)
                gamma = gen.randn([ch], dt) if affine else None
                beta = gen.randn([ch], dt) if affine else None
                c.input("x", x)
                c.input("stats", st, "contig", "f32")
                if affine:
                    c.input("gamma", gamma, "contig")
                    c.input("beta", beta, "contig")
                c.output("y", x.shape)
                cpg = ch // groups
                m4 = st[:, :, 0].repeat_interleave(cpg, dim=1).reshape(n, ch, 1, 1)
                v4 = st[:, :, 1].repeat_interleave(cpg, dim=1).reshape(n, ch, 1, 1)
                y = (x - m4) / torch.sqrt(v4 + f32(1e-5))
                if affine:
                    y = y * gamma.reshape(1, ch, 1, 1) + beta.reshape(1, ch, 1, 1)
                c.ref = act_ref(act, y)
                c.cond = max(1.0, abs(mean) / 2.0)
                cases.append(c)
    return cases


def layer_norm_cases(gen):
    specs = [
        # name, shape, gamma, beta, act, eps, in_place
        ("3d_affine", [3, 7, 40], True, True, "none", 1e-5, False),
        ("4d_gamma_gelu", [2, 3, 5, 64], True, False, "gelu", 1e-5, False),
        ("2d_beta", [17, 24], False, True, "none", 1e-6, False),
        ("1d_plain_silu", [33], False, False, "silu", 1e-3, False),
        ("2d_inplace", [4, 48], True, True, "none", 1e-5, True),
        ("large_mean", [6, 64], True, True, "none", 1e-5, False),
        ("d1_beta_only", [5, 1], False, True, "none", 1e-5, False),
    ]
    cases = []
    for name, shape, has_g, has_b, act, eps, in_place in specs:
        for dt in DTYPES:
            for lay in ["contig", "perm"]:
                c = Case("layer_norm", name, dt, lay, dict(eps=eps, act=ACT[act]))
                x = rnd(gen.randn(shape, dt, 1.5) + (300.0 if name == "large_mean" else -0.25), dt)
                d = shape[-1]
                gamma = gen.randn([d], dt) if has_g else None
                beta = gen.randn([d], dt) if has_b else None
                c.input("x", x)
                if has_g:
                    c.input("gamma", gamma, "contig")
                if has_b:
                    c.input("beta", beta, "contig")
                if in_place:
                    c.alias = ("y", "x")
                else:
                    c.output("y", shape)
                c.ref = act_ref(act, F.layer_norm(x, (d,), gamma, beta, f32(eps)))
                c.k = d
                c.cond = 300.0 / 1.5 if name == "large_mean" else 1.0
                cases.append(c)
    return cases


def attention_ref(q, k, v, scale):
    """softmax(scale * q k^T) v in float64 (torch 1.13 has no SDPA)."""
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    return torch.matmul(torch.softmax(s, dim=-1), v)


def attention_cases(gen):
    specs = [
        # name, B, H, Nq, Nkv, D, Dv, scale
        ("b2h2n16d32", 2, 2, 16, 16, 32, 32, 0.0),
        ("nq13nkv29_dv40", 1, 2, 13, 29, 24, 40, 0.3),
        ("d512", 1, 1, 20, 20, 512, 512, 0.0),
        ("h4nkv65d64", 1, 4, 7, 65, 64, 64, 0.0),
        ("big_scale", 1, 1, 9, 33, 16, 16, 2.5),
        # logits of several hundred: exp overflows fp32 unless the max is subtracted
        ("huge_logits", 1, 1, 9, 33, 16, 16, 30.0),
        ("nkv1", 2, 1, 5, 1, 8, 8, 0.0),
        ("nq1", 1, 2, 1, 40, 32, 16, 0.0),
        ("vae_mid_n256_d512", 1, 1, 256, 256, 512, 512, 0.0),
    ]
    cases = []
    for name, b, h, nq, nkv, d, dv, scale in specs:
        for dt in DTYPES:
            for lay in ["contig", "bnhd"]:
                c = Case("attention", name, dt, lay, dict(scale=scale))
                q = gen.randn([b, h, nq, d], dt)
                k = gen.randn([b, h, nkv, d], dt)
                v = gen.randn([b, h, nkv, dv], dt)
                c.input("q", q)
                c.input("k", k)
                c.input("v", v)
                c.output("out", [b, h, nq, dv])
                eff = f32(scale) if scale != 0.0 else 1.0 / math.sqrt(d)
                c.ref = attention_ref(q, k, v, eff)
                c.k = max(d, nkv)
                logits = torch.matmul(q.double(), k.double().transpose(-1, -2)) * eff
                c.cond = max(1.0, float(logits.pow(2).mean().sqrt()))
                cases.append(c)
    # two batch dims [B, B2, H, N, D]: contiguous, [B, B2, N, H, D] storage, and per-frame
    # attention over NCDHW videos (heads 1, B2 frames; the batch dims do not merge)
    for name, b, b2, h, n, d, layouts in [("b2_3_h2", 2, 3, 2, 12, 16, ["contig", "bnhd"]),
                                          ("frames_t3_c32", 2, 3, 1, 20, 32, ["frames_ncdhw"])]:
        for dt in DTYPES:
            for lay in layouts:
                c = Case("attention", name, dt, lay, dict(scale=0.0))
                q, k, v = (gen.randn([b, b2, h, n, d], dt) for _ in range(3))
                c.input("q", q)
                c.input("k", k)
                c.input("v", v)
                c.output("out", [b, b2, h, n, d])
                c.ref = attention_ref(q, k, v, 1.0 / math.sqrt(d))
                c.k = max(d, n)
                cases.append(c)
    return cases


def linear_cases(gen):
    specs = [
        # name, x shape, N, params
        ("m13k40n24_bias", [13, 40], 24, dict(bias=1)),
        ("b2m9_res_gelutanh", [2, 9, 32], 16,
         dict(bias=1, residual=1, act="gelu_tanh", output_scale=0.75, residual_scale=1.5)),
        ("m5k64n48_silu", [5, 64], 48, dict(act="silu")),
        ("reupload", [7, 16], 12, dict(bias=1, reupload=1)),
    ]
    cases = []
    for name, xs, nout, params in specs:
        for dt in DTYPES:
            for lay in ["contig", "T"]:
                p = set_act(params)
                c = Case("linear", name, dt, lay, c_params(p))
                kdim = xs[-1]
                x = gen.randn(xs, dt)
                wt = gen.randn([nout, kdim], dt, 1.0 / math.sqrt(kdim))
                c.input("w", wt)
                if p.get("reupload"):
                    wt = gen.randn([nout, kdim], dt, 1.0 / math.sqrt(kdim))
                    c.input("w2", wt)
                bias = gen.randn([nout], dt) if p.get("bias") else None
                acc = F.linear(x, wt)
                res = gen.randn(list(acc.shape), dt) if p.get("residual") else None
                c.input("x", x)
                if bias is not None:
                    c.input("bias", bias, "contig")
                if res is not None:
                    c.input("residual", res)
                c.output("y", acc.shape)
                if p.get("res_inplace"):
                    c.alias = ("y", "residual")
                c.ref = epilogue_ref(acc, bias, res, p, acc.dim() - 1)
                c.k = kdim
                cases.append(c)
    return cases


def matmul_cases(gen):
    specs = [
        # name, a shape, b shape, params
        ("m11k20n17_bias", [11, 20], [20, 17], dict(bias=1)),
        ("b3_shared_b_relu_res", [3, 10, 24], [24, 12], dict(bias=1, residual=1, act="relu",
                                                              residual_scale=0.25)),
        ("b2_post_relu_res_inplace", [2, 9, 16], [16, 11], dict(bias=1, residual=1, res_inplace=1, act="gelu",
                                                                 post_act="relu", residual_scale=-1.0)),
        ("batched_b_scale", [2, 8, 16], [2, 16, 9], dict(output_scale=-1.5)),
        ("shared_a", [12, 7], [3, 7, 5], dict(act="tanh")),
        ("k1", [5, 1], [1, 7], dict(bias=1)),
        ("m1", [1, 33], [33, 9], dict(act="gelu")),
        # a 3-D b whose batch stride is 0
        ("bcast_batch_b", [3, 6, 10], [3, 10, 4], dict(bias=1, bcast_b=1)),
    ]
    cases = []
    for name, ash, bsh, params in specs:
        for dt in DTYPES:
            for lay in ["contig", "T"]:
                p = set_act(params)
                c = Case("matmul", name, dt, lay, c_params(p))
                a = gen.randn(ash, dt)
                bm = gen.randn(bsh, dt, 1.0 / math.sqrt(ash[-1]))
                if p.get("bcast_b"):
                    bm = bm[:1].expand(*bsh)
                acc = torch.matmul(a, bm)
                bias = gen.randn([acc.shape[-1]], dt) if p.get("bias") else None
                res = gen.randn(list(acc.shape), dt) if p.get("residual") else None
                c.input("a", a)
                c.input("b", bm, "bcast_batch" if p.get("bcast_b") else None)
                if bias is not None:
                    c.input("bias", bias, "contig")
                if res is not None:
                    c.input("residual", res)
                c.output("y", acc.shape)
                if p.get("res_inplace"):
                    c.alias = ("y", "residual")
                c.ref = epilogue_ref(acc, bias, res, p, acc.dim() - 1)
                c.k = ash[-1]
                cases.append(c)
    return cases


def activation_cases(gen):
    cases = []
    # std 3; "wide": std 30, so exp() and tanh() saturate; "inplace": y is x
    for act, kind in [(a, "") for a in ACT] + [(a, "wide_") for a in ACT if a != "none"] + \
            [("silu", "inplace_"), ("gelu_tanh", "inplace_")]:
        for dt in DTYPES:
            for lay in IMG_LAYOUTS:
                c = Case("activation", kind + act, dt, lay, dict(act=ACT[act]))
                x = gen.randn([2, 5, 7, 6], dt, 30.0 if kind == "wide_" else 3.0)
                c.input("x", x)
                if kind == "inplace_":
                    c.alias = ("y", "x")
                else:
                    c.output("y", x.shape)
                c.ref = act_ref(act, x)
                cases.append(c)
    return cases


def activation_scaled_cases(gen):
    """y = out_scale * act(in_scale * x): every activation, TAESD's clamp 3*tanh(x/3) on
    saturating inputs, in place, and x in the other layout (a layout change)."""
    specs = [
        # name, act, in_scale, out_scale, std, mode
        ("none", "none", -2.0, 0.75, 3.0, "out"),
        ("relu", "relu", 0.5, -3.0, 3.0, "out"),
        ("silu", "silu", 1.5, 0.5, 3.0, "out"),
        ("gelu", "gelu", -0.7, 2.0, 3.0, "out"),
        ("gelu_tanh", "gelu_tanh", 0.25, 4.0, 3.0, "out"),
        ("tanh_clamp3", "tanh", 1.0 / 3.0, 3.0, 3.0, "out"),
        ("wide_tanh_clamp3", "tanh", 1.0 / 3.0, 3.0, 30.0, "out"),
        ("inplace_tanh_clamp3", "tanh", 1.0 / 3.0, 3.0, 3.0, "alias"),
        ("mixed_layout_silu", "silu", -1.25, 1.5, 3.0, "mixed"),
    ]
    cases = []
    for name, act, s_in, s_out, std, mode in specs:
        for dt in DTYPES:
            for lay in IMG_LAYOUTS:
                c = Case("activation_scaled", name, dt, lay, dict(act=ACT[act], in_scale=s_in, out_scale=s_out))
                x = gen.randn([2, 5, 7, 6], dt, std)
                c.input("x", x, ("nhwc" if lay == "nchw" else "nchw") if mode == "mixed" else None)
                if mode == "alias":
                    c.alias = ("y", "x")
                else:
                    c.output("y", x.shape)
                c.ref = f32(s_out) * act_ref(act, f32(s_in) * x)
                cases.append(c)
    return cases


def add_cases(gen):
    specs = [
        # name, alpha, beta, act, mode
        ("plain", 1.0, 1.0, "none", "out"),
        ("scaled", 0.5, -1.25, "none", "out"),
        ("silu", 1.0, 1.0, "silu", "out"),
        ("inplace_a_gelu", 0.3, 0.9, "gelu", "alias_a"),
        ("inplace_b", 1.0, -1.0, "relu", "alias_b"),
        ("mixed_layout_b", 2.0, 0.5, "tanh", "mixed"),
        # b is [N, C, 1, 1] seen as [N, C, H, W] through strides 0 (x + emb[:, :, None, None])
        ("broadcast_b", 1.0, 1.0, "none", "bcast"),
    ]
    cases = []
    for name, alpha, beta, act, mode in specs:
        for dt in DTYPES:
            for lay in IMG_LAYOUTS:
                c = Case("add", name, dt, lay, dict(alpha=alpha, beta=beta, act=ACT[act]))
                a = gen.randn([2, 6, 5, 7], dt)
                b = gen.randn([2, 6, 5, 7], dt)
                c.input("a", a)
                other = "nhwc" if lay == "nchw" else "nchw"
                if mode == "bcast":
                    b = gen.randn([2, 6, 1, 1], dt).expand(2, 6, 5, 7)
                    c.input("b", b, "bcast_hw")
                else:
                    c.input("b", b, other if mode == "mixed" else None)
                if mode == "alias_a":
                    c.alias = ("y", "a")
                elif mode == "alias_b":
                    c.alias = ("y", "b")
                else:
                    c.output("y", a.shape)
                c.ref = act_ref(act, f32(alpha) * a + f32(beta) * b)
                c.k = 2
                cases.append(c)
    return cases


def nearest_index(o, i):
    """difkern's documented source index: floor(j * in / out), exactly."""
    return torch.tensor([j * i // o for j in range(o)], dtype=torch.long)


def upsample_cases(gen):
    specs = [
        # name, N, C, H, W, OH, OW
        ("x2", 2, 3, 5, 6, 10, 12),
        ("ratio_7_9", 1, 4, 5, 6, 7, 9),
        ("down_3_4", 1, 3, 7, 5, 3, 4),
        ("same", 1, 2, 4, 4, 4, 4),
        ("x3_mixed", 1, 2, 3, 4, 9, 5),
        # torch's float index floor(j * (float)(H/OH)) differs from the exact
        # floor(j*H/OH) at H=3, OH=123 and W=2, OW=82 (j*W/OW integral)
        # (torch 1.13 takes that path for C == 1; with C > 1 it happens to agree)
        ("torch_float_index", 2, 1, 3, 2, 123, 82),
    ]
    cases = []
    for name, n, ch, h, w, oh, ow in specs:
        for dt in DTYPES:
            for lay in IMG_LAYOUTS:
                c = Case("upsample", name, dt, lay)
                x = gen.randn([n, ch, h, w], dt)
                c.input("x", x)
                c.output("y", [n, ch, oh, ow])
                ih, iw = nearest_index(oh, h), nearest_index(ow, w)
                c.ref = x[:, :, ih][:, :, :, iw]
                c.exact = True
                tref = F.interpolate(x, size=(oh, ow), mode="nearest")
                if not torch.equal(tref, c.ref):
                    bad = int((tref != c.ref).reshape(n * ch, oh, ow).any(0).sum())
                    c.note = f"torch F.interpolate differs from floor(i*H/OH) at {bad} output pixels"
                cases.append(c)
    # videos [N, C, T, H, W]: per frame, in time, both (torch's 3-D nearest agrees here)
    for name, n, ch, t, h, w, ot, oh, ow in [("video_frames_x2", 2, 3, 3, 4, 5, 3, 8, 10),
                                             ("video_time_x2", 1, 4, 2, 3, 4, 4, 3, 4),
                                             ("video_both_x2", 1, 2, 2, 3, 4, 4, 6, 8)]:
        for dt in DTYPES:
            for lay in VIDEO_LAYOUTS:
                c = Case("upsample", name, dt, lay)
                x = gen.randn([n, ch, t, h, w], dt)
                c.input("x", x)
                c.output("y", [n, ch, ot, oh, ow])
                it, ih, iw = nearest_index(ot, t), nearest_index(oh, h), nearest_index(ow, w)
                c.ref = x[:, :, it][:, :, :, ih][:, :, :, :, iw]
                c.exact = True
                if not torch.equal(F.interpolate(x, size=(ot, oh, ow), mode="nearest"), c.ref):
                    c.note = "torch F.interpolate (3-D) differs from the exact floor(i*T/OT)"
                cases.append(c)
    return cases


def special_f32_bits():
    """f32 values where rounding to f16/bf16 is delicate."""
    vals = [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,        # +-0, +-inf
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,        # quiet NaN, -NaN, signaling NaNs
        0x7F810000, 0xFF800100,                                # NaN whose top payload bits are 0
        0x00000001, 0x007FFFFF, 0x80400000,                    # f32 subnormals
        0x7F7FFFFF, 0xFF7FFFFF,                                # f32 max: bf16 rounds to inf
        0x7F7F8000, 0x7F7F7FFF,                                # bf16: tie at max -> inf (even), below
        0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF,        # bf16 ties to even, just above/below
        0x3F801000, 0x3F803000, 0x3F801001, 0x3F800FFF,        # f16 ties to even (1+2^-11, 1+3*2^-11)
        0x477FE000, 0x477FEFFF, 0x477FF000, 0x47800000,        # f16 max 65504, below/at overflow tie, 65536
        0x38800000, 0x387FFFFF, 0x33800000, 0x33000000,        # f16 min normal, below, min subnormal, half of it
        0x33000001, 0x33C00000, 0x34200000, 0x32FFFFFF,        # f16 subnormal rounding and ties
        0x38000000, 0x387FC000, 0x387FE000, 0x387FF000,        # f16 subnormals near the normal range
        0x00800000, 0x80800000, 0x00400000,                    # f32 min normal, bf16 subnormal
        0x3F800000, 0xBF800000, 0x40490FDB, 0xC0490FDB,        # +-1, +-pi
    ]
    return torch.tensor([v - (1 << 32) if v >= 1 << 31 else v for v in vals], dtype=torch.int32)


def all_bits16():
    return torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int64).to(torch.int16)


def np_to_bf16_bits(f32_bits):
    """Round-to-nearest-even f32 -> bf16 on the bits (NaN -> quiet NaN), computed
    independently of torch to cross-check torch's conversion."""
    u = f32_bits.numpy().view(np.uint32).astype(np.uint64)
    out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint32)
    return torch.from_numpy(out.astype(np.uint16).view(np.int16).copy())


def convert_cases(gen):
    cases = []
    # layout conversion in every dtype (same dtype, NCHW <-> NHWC, exact)
    for dt in DTYPES:
        for lay in IMG_LAYOUTS:
            other = "nhwc" if lay == "nchw" else "nchw"
            c = Case("convert", "layout_to_" + other, dt, lay)
            x = gen.randn([2, 5, 4, 6], dt)
            c.input("x", x)
            c.output("y", x.shape, other)
            c.ref = x
            c.exact = True
            cases.append(c)
    # dtype conversion of random values, with and without a layout change
    for src in DTYPES:
        for dst in DTYPES:
            if src == dst:
                continue
            for lay in IMG_LAYOUTS:
                c = Case("convert", f"{src}_to_{dst}", src, lay)
                x = gen.randn([2, 3, 5, 7], src, 4.0)
                c.input("x", x)
                c.output("y", x.shape, "nhwc" if lay == "nchw" else "nchw", dst)
                c.ref = x.to(TORCH_DT[src]).to(TORCH_DT[dst]).to(torch.float64)
                c.exact = True
                cases.append(c)
    # special values and random bit patterns, f32 -> f16 / bf16 against torch
    rand32 = gen.bits(4096, "f32")
    bits = torch.cat([special_f32_bits(), rand32])
    # magnitudes near the f16 range (subnormals, overflow), where random bits rarely land
    near = (torch.rand(2048, generator=gen.g, dtype=torch.float64) * 44 - 28)
    near = (torch.sign(torch.randn(2048, generator=gen.g, dtype=torch.float64)) * torch.exp2(near))
    bits = torch.cat([bits, near.to(torch.float32).view(torch.int32)])
    xf = bits.view(torch.float32)
    for dst in ["f16", "bf16"]:
        c = Case("convert", f"f32_special_to_{dst}", "f32", "contig")
        c.input("x", None, bits=bits)
        c.output("y", [bits.numel()], dt=dst)
        c.ref = xf.to(TORCH_DT[dst]).to(torch.float64)
        c.exact = True
        if dst == "f16":
            with np.errstate(over="ignore", invalid="ignore"):
                npref = torch.from_numpy(xf.numpy().astype(np.float16).astype(np.float64))
        else:
            npref = np_to_bf16_bits(bits).view(torch.bfloat16).to(torch.float64)
        agree = torch.equal(torch.isnan(npref), torch.isnan(c.ref)) and \
            torch.equal(torch.nan_to_num(npref), torch.nan_to_num(c.ref))
        if not agree:
            c.note = f"torch's {dst} rounding differs from numpy's/bitwise RNE"
        cases.append(c)
    # every 16-bit pattern: f16/bf16 -> f32 and f16 <-> bf16
    b16 = all_bits16()
    for src in ["f16", "bf16"]:
        for dst in ["f32", "bf16" if src == "f16" else "f16"]:
            c = Case("convert", f"all_{src}_to_{dst}", src, "contig")
            c.input("x", None, bits=b16)
            c.output("y", [b16.numel()], dt=dst)
            c.ref = b16.view(TORCH_DT[src]).to(TORCH_DT[dst]).to(torch.float64)
            c.exact = True
            cases.append(c)
    return cases


def rms_norm_ref(x, form, eps, gamma, beta):
    """dk_rms_norm in PyTorch: DK_RMS_NORM_MEAN_SQUARE (form 0) as
    x * rsqrt(mean_c(x^2) + eps), DK_RMS_NORM_L2 (form 1) as the Wan VAE's
    RMS_norm, F.normalize(x, dim=1) * C**0.5; then * gamma + beta per channel."""
    c = x.shape[1]
    if form == 0:
        y = x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + f32(eps))
    else:
        y = F.normalize(x, dim=1, eps=f32(eps)) * c ** 0.5
    per_channel = [1, c] + [1] * (x.dim() - 2)
    if gamma is not None:
        y = y * gamma.view(per_channel)
    if beta is not None:
        y = y + beta.view(per_channel)
    return y


def rms_norm_cases(gen):
    specs = [
        # name, shape, form (0 MEAN_SQUARE, 1 L2), gamma/beta (True, "f32", "gamma", False), act, eps, in_place, mean
        ("ms_affine", [2, 24, 5, 6], 0, True, "none", 1e-6, False, 0.5),
        ("l2_wan_silu", [1, 32, 4, 4], 1, True, "silu", 1e-12, False, 0.5),
        ("ms_noaffine_gelu", [2, 12, 3, 5], 0, False, "gelu", 1e-5, False, 0.5),
        ("l2_inplace_gamma", [1, 16, 6, 5], 1, "gamma", "none", 1e-12, True, 0.5),
        ("l2_f32affine", [2, 40, 3, 3], 1, "f32", "none", 1e-12, False, 0.5),
        # mean 30 / std 2: a LayerNorm (centred) would give a different answer
        ("ms_large_mean", [1, 16, 4, 4], 0, True, "none", 1e-6, False, 30.0),
        ("l2_c3", [2, 3, 4, 5], 1, True, "tanh", 1e-12, False, 0.5),
        # videos [N, C, T, H, W]
        ("video_l2_silu", [1, 16, 3, 4, 5], 1, True, "silu", 1e-12, False, 0.5),
        ("video_ms_b2", [2, 8, 2, 3, 3], 0, "f32", "none", 1e-6, False, 0.5),
        # [N, C] and [N, C, L]
        ("2d_l2", [9, 40], 1, True, "none", 1e-12, False, 0.5),
        ("3d_ms_inplace", [2, 12, 11], 0, True, "none", 1e-6, True, 0.5),
    ]
    cases = []
    for name, shape, form, affine, act, eps, in_place, mean in specs:
        layouts = {4: IMG_LAYOUTS, 5: VIDEO_LAYOUTS}.get(len(shape), ["contig", "perm"])
        for dt in DTYPES:
            for lay in layouts:
                c = Case("rms_norm", name, dt, lay, dict(form=form, eps=eps, act=ACT[act]))
                x = rnd(gen.randn(shape, dt, 2.0) + mean, dt)
                ch = shape[1]
                adt = "f32" if affine == "f32" else dt
                gamma = gen.randn([ch], adt) if affine else None
                beta = gen.randn([ch], adt) if affine and affine != "gamma" else None
                c.input("x", x)
                if gamma is not None:
                    c.input("gamma", gamma, "contig", dt=adt)
                if beta is not None:
                    c.input("beta", beta, "contig", dt=adt)
                if in_place:
                    c.alias = ("y", "x")
                else:
                    c.output("y", x.shape)
                c.ref = act_ref(act, rms_norm_ref(x, form, eps, gamma, beta))
                c.k = ch
                cases.append(c)
    return cases


ALL_OPS = [conv_cases, conv_transpose_cases, conv3d_cases, group_norm_cases, group_norm_split_cases, layer_norm_cases, rms_norm_cases,
           attention_cases,
           linear_cases, matmul_cases, activation_cases, activation_scaled_cases, add_cases, upsample_cases, convert_cases]


# -------------------------------------------------------------- run & compare

def build_batch(cases, gen):
    """Lays out every case's buffers; returns (manifest text, input blob, output
    size, per-case output placement)."""
    lines, blob, out_size, outs = [], bytearray(), 0, {}
    for c in cases:
        lines.append(f"case {c.name} {c.op}")
        for k, v in c.params.items():
            lines.append(f"p {k} {v!r}")
        placed = {}
        for role, bits, dt, lay in c.inputs:
            shape = list(bits.shape)
            off, gap = layout_params(lay, gen.rand_int(0, 4))
            if role == "w2":  # replaces w's bytes in w's buffer: the same placement
                off = placed["w"].offset
            pl = Placement(shape, dt, lay, len(blob), off, gap)
            buf = torch.full((pl.bufelems,), NAN_BITS[dt], dtype=INT_DT[dt])
            pl.store(buf, bits)
            blob += buf.numpy().tobytes()
            lines.append(pl.line("t", role))
            placed[role] = pl
        if c.alias:
            role, of = c.alias
            src = placed[of]
            pl = Placement(src.shape, src.dt, "nchw", out_size)
            pl.strides, pl.offset, pl.bufelems = src.strides, src.offset, src.bufelems
            lines.append(f"a {role} {of} {out_size}")
        else:
            role, shape, dt, lay = c.out
            off, gap = layout_params(lay, gen.rand_int(0, 4))
            pl = Placement(shape, dt, lay, out_size, off, gap)
            lines.append(pl.line("o", role))
        outs[c.name] = pl
        out_size += pl.nbytes()
        lines.append("end")
    return "\n".join(lines) + "\n", bytes(blob), out_size, outs


def same_bits(out, ref):
    """Equal values, equal signs of zero, NaN exactly where ref has NaN."""
    on, rn = torch.isnan(out), torch.isnan(ref)
    if not torch.equal(on, rn):
        return False, int((on != rn).sum())
    o, r = out[~on], ref[~rn]
    bad = (o != r) | (torch.signbit(o) != torch.signbit(r))
    return not bool(bad.any()), int(bad.sum())


def check(c, status, msg, out_blob, pl):
    """Returns (ok, error text, metric text)."""
    if status != "DK_OK":
        return False, f"{status}: {msg}", "-"
    raw = np.frombuffer(out_blob, dtype=NP_INT[pl.dt], count=pl.bufelems, offset=pl.blob_off)
    buf = torch.from_numpy(raw.copy()).view(TORCH_DT[pl.dt]).to(torch.float64)
    outside = buf[pl.outside_mask()]
    if not bool(torch.isnan(outside).all()):
        return False, f"wrote {int((~torch.isnan(outside)).sum())} elements outside its output view", "-"
    out = pl.view(buf)
    if c.exact:
        ok, nbad = same_bits(out, c.ref)
        if not ok:
            idx = torch.nonzero(~((out == c.ref) | (torch.isnan(out) & torch.isnan(c.ref))))[:3].tolist()
            ex = "; ".join(f"{i}: got {out[tuple(i)].item()!r} want {c.ref[tuple(i)].item()!r}" for i in idx)
            return False, f"{nbad} elements differ from the exact result ({ex})", f"{nbad} diff"
        return True, "", "exact"
    nan = int(torch.isnan(out).sum())
    if nan:
        return False, f"{nan} NaN elements in the output (unwritten or computed)", "NaN"
    err = float(torch.linalg.norm(out - c.ref) / max(float(torch.linalg.norm(c.ref)), 1e-300))
    tol = tolerance(c.dt, c.k, c.cond)
    metric = f"{err:.2e}/{tol:.1e}"
    if not err <= tol:
        i = int(torch.argmax((out - c.ref).abs()))
        flat_o, flat_r = out.reshape(-1), c.ref.reshape(-1)
        return False, (f"relative L2 error {err:.3e} > tolerance {tol:.1e}; worst element {i}: "
                       f"got {flat_o[i].item():.6g} want {flat_r[i].item():.6g}"), metric
    return True, "", metric


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", required=True, help="path of the oracle_ops executable")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    args = ap.parse_args()
    if not os.access(args.runner, os.X_OK):
        print(f"oracle: runner {args.runner} is not an executable")
        return 1
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % (2 ** 31)
    print(f"oracle: seed {seed} (rerun with --seed {seed}); torch {torch.__version__}")
    torch.set_num_threads(2)
    gen = Gen(seed)
    cases = [c for make in ALL_OPS for c in make(gen) if args.filter in c.name]
    if not cases:
        print("oracle: no case matches the filter")
        return 1
    manifest, in_blob, out_size, outs = build_batch(cases, gen)

    with tempfile.TemporaryDirectory(prefix="dk-oracle-") as tmp:
        paths = [os.path.join(tmp, n) for n in ("manifest.txt", "in.bin", "out.bin")]
        with open(paths[0], "w") as f:
            f.write(manifest)
        with open(paths[1], "wb") as f:
            f.write(in_blob)
        t0 = time.time()
        try:
            proc = subprocess.run([args.runner] + paths + [str(out_size)], capture_output=True, text=True,
                                  timeout=300)
        except subprocess.TimeoutExpired as e:
            print(f"oracle: runner did not finish within {e.timeout} s")
            return 1
        dt_run = time.time() - t0
        out_blob = b""
        if os.path.exists(paths[2]):
            with open(paths[2], "rb") as f:
                out_blob = f.read()
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("context "):
            print("oracle: " + line)
        if line.startswith("result "):
            parts = line.split(" ", 3)
            results[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
    if proc.returncode != 0:
        print(f"oracle: runner exited with {proc.returncode}")
    if proc.stderr.strip():  # sanitizer reports land here too
        print(f"oracle: runner stderr:\n{proc.stderr.rstrip()}")

    failures, notes = [], []
    width = max(len(c.name) for c in cases)
    print(f"{'case':<{width}}  {'result':<6}  {'err/tol':<17}  detail")
    for c in cases:
        pl = outs[c.name]
        if c.name not in results:
            ok, err, metric = False, "no result from the runner (crashed or stopped before it)", "-"
        elif len(out_blob) < pl.blob_off + pl.nbytes():
            ok, err, metric = False, "output blob is short", "-"
        else:
            ok, err, metric = check(c, results[c.name][0], results[c.name][1], out_blob, pl)
        if c.note:
            notes.append(f"{c.name}: {c.note}")
        if not ok:
            failures.append(f"{c.name}: {err}")
        if not ok or not args.quiet:
            note = f"  [note] {c.note}" if c.note else ""
            print(f"{c.name:<{width}}  {'ok' if ok else 'FAIL':<6}  {metric:<17}  {err}{note}")
    print(f"\noracle: {len(cases) - len(failures)}/{len(cases)} cases passed "
          f"(runner {dt_run:.1f} s, seed {seed})")
    if notes:
        print("oracle: notes on PyTorch (not failures of difkern):")
        for n in sorted(set(x.split(": ", 1)[1] for x in notes)):
            print(f"  - {n} ({sum(1 for x in notes if x.endswith(n))} cases)")
    if failures:
        by_op = {}
        for f_ in failures:
            by_op.setdefault(f_.split(".", 1)[0], []).append(f_)
        print("oracle: FAILED: " + ", ".join(f"{k} {len(v)}" for k, v in by_op.items()))
        return 1
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
