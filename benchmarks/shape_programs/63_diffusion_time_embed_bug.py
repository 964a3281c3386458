"""Denoising diffusion training step with a tiny time-conditioned U-Net."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

T_STEPS = 100
T_DIM = 64
IMG = 16
BATCH = 8


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half)
    args = t.float()[:, None] * freqs[None, :]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)  # (B, dim)


class ResBlock(nn.Module):
    def __init__(self, in_ch, out_ch, t_dim):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.norm1 = nn.GroupNorm(8, out_ch)
        self.norm2 = nn.GroupNorm(8, out_ch)
        self.t_proj = nn.Linear(t_dim, out_ch)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x, t_emb):
        h = F.silu(self.norm1(self.conv1(x)))
        h = h + self.t_proj(t_emb)
        h = F.silu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_mlp = nn.Sequential(nn.Linear(T_DIM, T_DIM), nn.SiLU())
        self.inp = nn.Conv2d(1, 16, 3, padding=1)
        self.down = ResBlock(16, 32, T_DIM)
        self.mid = ResBlock(32, 32, T_DIM)
        self.up = ResBlock(64, 16, T_DIM)
        self.out = nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x, t):
        temb = self.t_mlp(timestep_embedding(t, T_DIM))
        h0 = self.inp(x)
        h1 = self.down(F.avg_pool2d(h0, 2), temb)
        h2 = self.mid(h1, temb)
        h = self.up(torch.cat([h2, h1], dim=1), temb)
        return self.out(F.interpolate(h, scale_factor=2.0) + h0)


if __name__ == "__main__":
    torch.manual_seed(0)
    betas = torch.linspace(1e-4, 0.02, T_STEPS)
    alpha_bar = torch.cumprod(1.0 - betas, dim=0)
    model = TinyUNet()
    opt = torch.optim.Adam(model.parameters(), lr=2e-4)
    x0 = torch.randn(BATCH, 1, IMG, IMG)
    t = torch.randint(0, T_STEPS, (BATCH,))
    noise = torch.randn_like(x0)
    ab = alpha_bar[t].view(-1, 1, 1, 1)
    x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
    loss = F.mse_loss(model(x_t, t), noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("diffusion loss", loss.item())
