"""A plain PyTorch TAESD-family encoder and decoder (TAESD, TAESDXL, TAESD3,
TAEF1, TAEF2), written from the architecture facts with torch.nn only: the
reference for difkern's src/vae/taesd_*.c.  The modules are nn.Sequential with
the original checkpoints' indices, so state_dict() keys are the "sequential"
naming; rename() maps them to the other namings."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CH, POOL_CH, POOL_GROUPS = 64, 256, 4

# member -> (latent channels, pool branches)
MEMBERS = {
    "taesd": (4, False),
    "taesdxl": (4, False),
    "taesd3": (16, False),
    "taef1": (16, False),
    "taef2": (32, True),
}


def conv3(cin, cout, stride=1, bias=True):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=bias)


class Block(nn.Module):
    """relu(conv(relu(conv(relu(conv(x))))) + x), after x += pool(x) where present."""

    def __init__(self, pool=False):
        super().__init__()
        self.conv = nn.Sequential(conv3(CH, CH), nn.ReLU(), conv3(CH, CH), nn.ReLU(), conv3(CH, CH))
        if pool:
            self.pool = nn.Sequential(nn.Conv2d(CH, POOL_CH, 1, bias=False),
                                      nn.GroupNorm(POOL_GROUPS, POOL_CH, eps=1e-5), nn.ReLU(),
                                      nn.Conv2d(POOL_CH, CH, 1, bias=False))
        else:
            self.pool = None

    def forward(self, x):
        if self.pool is not None:
            x = x + self.pool(x)
        return F.relu(self.conv(x) + x)


class Clamp(nn.Module):
    def forward(self, x):
        return 3 * torch.tanh(x / 3)


class Up2(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


def encoder(c, pool):
    layers = [conv3(3, CH), Block()]
    for stage in range(3):
        layers.append(conv3(CH, CH, stride=2, bias=False))
        layers += [Block(pool and stage == 2) for _ in range(3)]
    layers.append(conv3(CH, c))
    return nn.Sequential(*layers)


def decoder(c, pool):
    layers = [Clamp(), conv3(c, CH), nn.ReLU()]
    for stage in range(3):
        layers += [Block(pool and stage == 0) for _ in range(3)]
        layers += [Up2(), conv3(CH, CH, bias=False)]
    layers += [Block(), conv3(CH, 3)]
    return nn.Sequential(*layers)


def randomize(model, seed):
    """He-uniform conv weights (conv.4 and pool.3 x 1/4), biases and GroupNorm
    beta in +-0.05, gamma 1 +- 0.05 (seeded)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                base = 1.0 if name.endswith("pool.1.weight") else 0.0
                p.copy_(base + 0.05 * (torch.rand(p.shape, generator=g) * 2 - 1))
            else:
                b = (6.0 / p[0].numel()) ** 0.5
                if name.endswith("conv.4.weight") or name.endswith("pool.3.weight"):
                    b *= 0.25
                p.copy_(b * (torch.rand(p.shape, generator=g) * 2 - 1))


def rename(key, direction, naming):
    """A sequential key ("3.conv.0.weight") of direction "encoder"/"decoder" in
    another naming: "sequential", "comfyui" or "diffusers" (AutoencoderTiny,
    whose decoder has no layer for the clamp: its indices are one lower)."""
    if naming == "sequential":
        return key
    if naming == "comfyui":
        return "taesd_%s.%s" % (direction, key)
    idx, rest = key.split(".", 1)
    if direction == "decoder":
        idx = str(int(idx) - 1)
    return "%s.layers.%s.%s" % (direction, idx, rest)
