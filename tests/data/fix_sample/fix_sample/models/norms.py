"""Normalisation layers for channels-first feature maps and token sequences.

Each layer normalises with a small ε (1e-6 unless told otherwise) added to the variance, so that
a constant input maps to zeros instead of NaN.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channel dim of a (B, C, H, W) map, without permuting to channels-last."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=1, keepdim=True)
        var = (x - mean).pow(2).mean(dim=1, keepdim=True)
        x = (x - mean) * torch.rsqrt(var + self.eps)
        if self.elementwise_affine:
            x = x * self.weight[:, None, None] + self.bias[:, None, None]
        return x


class RMSNorm(nn.Module):
    """Root-mean-square norm (no centring), computed in float32 whatever the input dtype."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * self.weight).to(dtype)


class ScaleNorm(nn.Module):
    """Scale the whole vector to a learned length g: g · x / ‖x‖."""

    def __init__(self, init_scale: float = 1.0, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.Tensor(1))
        nn.init.constant_(self.scale, init_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp(min=self.eps)
        return self.scale * x / norm


class InstanceStandardize(nn.Module):
    """Standardise every sample over all its features: zero mean and unit variance per sample."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.size(0)
        flat = x.view(batch, -1)
        centred = flat - flat.mean(dim=1)
        std = centred.pow(2).mean(dim=1, keepdim=True).add(self.eps).sqrt()
        return (centred / std).view_as(x)


class GroupNormAct(nn.GroupNorm):
    """GroupNorm followed by an activation, fused into one module for cleaner model code."""

    def __init__(self, num_channels: int, num_groups: int = 32, eps: float = 1e-5, act: bool = True) -> None:
        super().__init__(min(num_groups, num_channels), num_channels, eps=eps)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
        return self.act(x)


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, for fine-tuning with small batches."""

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)

    @classmethod
    def convert(cls, module: nn.Module) -> nn.Module:
        """Replace every BatchNorm2d under `module` with a frozen copy of it."""
        if isinstance(module, nn.BatchNorm2d):
            frozen = cls(module.num_features, module.eps)
            if module.affine:
                frozen.weight.copy_(module.weight.detach())
                frozen.bias.copy_(module.bias.detach())
            frozen.running_mean.copy_(module.running_mean)
            frozen.running_var.copy_(module.running_var)
            return frozen
        for name, child in module.named_children():
            setattr(module, name, cls.convert(child))
        return module


def weight_normed_conv(in_channels: int, out_channels: int, kernel_size: int = 3) -> nn.Module:
    """A conv whose weight is reparametrised as direction × magnitude (Salimans and Kingma)."""
    conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
    return weight_norm(conv, name="weight", dim=0)


def standardize_weight(weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Weight standardisation for a conv kernel (O, I, kH, kW): zero mean, unit variance per filter."""
    flat = weight.reshape(weight.shape[0], -1)
    mean = flat.mean(dim=1, keepdim=True)
    var = flat.var(dim=1, unbiased=False, keepdim=True)
    return ((flat - mean) / torch.sqrt(var + eps)).view_as(weight)
