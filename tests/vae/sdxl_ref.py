"""A plain PyTorch SDXL VAE decoder (AutoencoderKL's post_quant_conv + decoder),
written from the architecture with torch.nn only: the reference for difkern's
decoder.  Module attribute names follow diffusers, so state_dict() keys are the
diffusers names; to_original() maps them to the original checkpoint naming."""
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

GROUPS, EPS = 32, 1e-6


class Resnet(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = nn.GroupNorm(GROUPS, cin, eps=EPS)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(GROUPS, cout, eps=EPS)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.conv_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        sc = self.conv_shortcut(x) if hasattr(self, "conv_shortcut") else x
        return sc + h


class Attention(nn.Module):
    """Single-head self-attention over the h*w pixels, with a residual."""

    def __init__(self, c):
        super().__init__()
        self.group_norm = nn.GroupNorm(GROUPS, c, eps=EPS)
        self.to_q = nn.Linear(c, c)
        self.to_k = nn.Linear(c, c)
        self.to_v = nn.Linear(c, c)
        self.to_out = nn.ModuleList([nn.Linear(c, c)])

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.group_norm(x).reshape(b, c, h * w).transpose(1, 2)
        q, k, v = self.to_q(t), self.to_k(t), self.to_v(t)
        p = torch.softmax(q @ k.transpose(1, 2) / c ** 0.5, dim=-1)
        o = self.to_out[0](p @ v)
        return x + o.transpose(1, 2).reshape(b, c, h, w)


class MidBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.resnets = nn.ModuleList([Resnet(c, c), Resnet(c, c)])
        self.attentions = nn.ModuleList([Attention(c)])

    def forward(self, x):
        return self.resnets[1](self.attentions[0](self.resnets[0](x)))


class Upsampler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class UpBlock(nn.Module):
    def __init__(self, cin, cout, upsample):
        super().__init__()
        self.resnets = nn.ModuleList([Resnet(cin if i == 0 else cout, cout) for i in range(3)])
        if upsample:
            self.upsamplers = nn.ModuleList([Upsampler(cout)])

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if hasattr(self, "upsamplers"):
            x = self.upsamplers[0](x)
        return x


class Decoder(nn.Module):
    def __init__(self, lc=4):
        super().__init__()
        ch = [512, 512, 256, 128]
        self.conv_in = nn.Conv2d(lc, 512, 3, padding=1)
        self.mid_block = MidBlock(512)
        self.up_blocks = nn.ModuleList(
            [UpBlock(ch[max(i - 1, 0)], ch[i], i < 3) for i in range(4)])
        self.conv_norm_out = nn.GroupNorm(GROUPS, 128, eps=EPS)
        self.conv_out = nn.Conv2d(128, 3, 3, padding=1)

    def forward(self, x):
        x = self.mid_block(self.conv_in(x))
        for b in self.up_blocks:
            x = b(x)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


class SDXLVAEDecoder(nn.Module):
    def __init__(self, scaling_factor=0.13025):
        super().__init__()
        self.scaling_factor = scaling_factor
        self.post_quant_conv = nn.Conv2d(4, 4, 1)
        self.decoder = Decoder()

    def forward(self, z):
        return self.decoder(self.post_quant_conv(z / self.scaling_factor))


def randomize(model, seed):
    """He-uniform weights, small biases, GroupNorm gamma 1 +- 0.05 (seeded)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                base = 1.0 if ("norm" in name and name.endswith("weight")) else 0.0
                p.copy_(base + 0.05 * (torch.rand(p.shape, generator=g) * 2 - 1))
            else:
                fan_in = p[0].numel()
                b = (6.0 / fan_in) ** 0.5
                if name.endswith("conv2.weight") or "to_out" in name:
                    b *= 0.25
                p.copy_(b * (torch.rand(p.shape, generator=g) * 2 - 1))


def mid_to_original(n, tensor, side):
    """The single-file names of side's ("decoder" or "encoder") mid block, the
    shortcuts and the output norm; the attention's linear weights become 1x1
    convs."""
    n = n.replace(side + ".mid_block.resnets.0", side + ".mid.block_1")
    n = n.replace(side + ".mid_block.resnets.1", side + ".mid.block_2")
    att = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}
    m = re.match(side + r"\.mid_block\.attentions\.0\.(.*)\.(weight|bias)", n)
    if m:
        n = "%s.mid.attn_1.%s.%s" % (side, att[m.group(1)], m.group(2))
        if m.group(1) != "group_norm" and m.group(2) == "weight":
            tensor = tensor.reshape(tensor.shape[0], tensor.shape[1], 1, 1)  # stored as 1x1 convs
    n = n.replace("conv_shortcut", "nin_shortcut").replace("conv_norm_out", "norm_out")
    return n, tensor


def to_original(name, tensor):
    """diffusers key -> original single-file key (without first_stage_model.)."""
    n = name
    m = re.match(r"decoder\.up_blocks\.(\d)\.(.*)", n)
    if m:
        rest = m.group(2).replace("resnets.", "block.").replace("upsamplers.0.conv", "upsample.conv")
        n = "decoder.up.%d.%s" % (3 - int(m.group(1)), rest)
    return mid_to_original(n, tensor, "decoder")
