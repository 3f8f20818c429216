"""A plain PyTorch AutoencoderKL (decoder and encoder, any latent channel count,
with or without the quant convs), written from the architecture with torch.nn
only: the oracle for difkern's family VAE (src/vae/vae_*.c).  The decoder
is sdxl_ref.py's; module names follow diffusers, so state_dict()
keys are the diffusers names; to_original() maps them to the single-file naming.

Model table (include/difkern/vae.h): name -> (latent channels, quant convs,
scaling factor, shift factor)."""
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

import sdxl_ref
from sdxl_ref import EPS, GROUPS, MidBlock, Resnet

MODELS = {
    "sd15": (4, True, 0.18215, 0.0),
    "sdxl": (4, True, 0.13025, 0.0),
    "sd3": (16, False, 1.5305, 0.0609),
    "flux1": (16, False, 0.3611, 0.1159),
}


class Downsampler(nn.Module):
    """Zero padding of 0 on the top/left and 1 on the bottom/right, then a 3x3
    stride-2 conv without padding."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride=2, padding=0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class DownBlock(nn.Module):
    def __init__(self, cin, cout, downsample):
        super().__init__()
        self.resnets = nn.ModuleList([Resnet(cin if i == 0 else cout, cout) for i in range(2)])
        if downsample:
            self.downsamplers = nn.ModuleList([Downsampler(cout)])

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if hasattr(self, "downsamplers"):
            x = self.downsamplers[0](x)
        return x


class Encoder(nn.Module):
    def __init__(self, lc):
        super().__init__()
        ch = [128, 256, 512, 512]
        self.conv_in = nn.Conv2d(3, 128, 3, padding=1)
        self.down_blocks = nn.ModuleList(
            [DownBlock(ch[max(i - 1, 0)], ch[i], i < 3) for i in range(4)])
        self.mid_block = MidBlock(512)
        self.conv_norm_out = nn.GroupNorm(GROUPS, 512, eps=EPS)
        self.conv_out = nn.Conv2d(512, 2 * lc, 3, padding=1)

    def forward(self, x):
        x = self.conv_in(x)
        for b in self.down_blocks:
            x = b(x)
        return self.conv_out(F.silu(self.conv_norm_out(self.mid_block(x))))


class AutoencoderKL(nn.Module):
    def __init__(self, lc, quant):
        super().__init__()
        self.lc = lc
        self.encoder = Encoder(lc)
        self.decoder = sdxl_ref.Decoder(lc)
        if quant:
            self.quant_conv = nn.Conv2d(2 * lc, 2 * lc, 1)
            self.post_quant_conv = nn.Conv2d(lc, lc, 1)

    def moments(self, image):
        m = self.encoder(image)
        return self.quant_conv(m) if hasattr(self, "quant_conv") else m

    def encode(self, image, scaling, shift, noise=None):
        """latents = (mean [+ exp(0.5 clamp(logvar, -30, 20)) * noise] - shift) * scaling"""
        m = self.moments(image)
        mean, logvar = m[:, :self.lc], m[:, self.lc:]
        z = mean
        if noise is not None:
            z = mean + torch.exp(0.5 * torch.clamp(logvar, -30.0, 20.0)) * noise
        return (z - shift) * scaling

    def decode(self, latents, scaling, shift):
        z = latents / scaling + shift
        if hasattr(self, "post_quant_conv"):
            z = self.post_quant_conv(z)
        return self.decoder(z)


def _mix(x):
    m = (1 << 64) - 1
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & m
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & m
    return x ^ (x >> 31)


def noise(seed, n):
    """dk_vae_noise(seed, i) for i < n (include/difkern/vae.h), float64."""
    import math
    m, g = (1 << 64) - 1, 0x9e3779b97f4a7c15
    out = []
    for i in range(n):
        a = _mix((seed + (2 * i + 1) * g) & m)
        b = _mix((seed + (2 * i + 2) * g) & m)
        u1 = ((a >> 11) + 1) * 2.0 ** -53
        u2 = (b >> 11) * 2.0 ** -53
        out.append(math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))
    return torch.tensor(out, dtype=torch.float64)


def to_original(name, tensor):
    """diffusers key -> original single-file key (without first_stage_model.)."""
    if name.startswith("decoder."):
        return sdxl_ref.to_original(name, tensor)
    n = name
    m = re.match(r"encoder\.down_blocks\.(\d)\.(.*)", n)
    if m:
        rest = m.group(2).replace("resnets.", "block.").replace("downsamplers.0.conv", "downsample.conv")
        n = "encoder.down.%s.%s" % (m.group(1), rest)
    return sdxl_ref.mid_to_original(n, tensor, "encoder")
