"""Building blocks and the HybridNet model: a conv stem and stages, then attention stages."""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from fix_sample.models.attention import MultiHeadAttention, WindowBlock
from fix_sample.models.heads import ClassifierHead
from fix_sample.models.norms import LayerNorm2d


class _SwishFunction(torch.autograd.Function):
    """Swish that saves only its input and recomputes the sigmoid in backward, to save memory."""

    @staticmethod
    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    @torch.cuda.amp.custom_bwd
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        sig = torch.sigmoid(x)
        return grad_output * (sig * (1 + x * (1 - sig)))


class MemoryEfficientSwish(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SwishFunction.apply(x)


def scaled_elu(x: torch.Tensor, alpha: float = 1.6733, scale: float = 1.0507) -> torch.Tensor:
    """SELU written out, so that alpha and scale can be tuned per layer."""
    return scale * torch.where(x > 0, x, alpha * (torch.exp(x) - 1))


class ConvBlock(nn.Module):
    """Conv -> norm -> activation, the basic unit of the stem and the conv stages."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        stride: int = 1,
        groups: int = 1,
        act_layer: Callable[[], nn.Module] = nn.GELU,
    ) -> None:
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2, groups=groups, bias=False
        )
        self.norm = nn.BatchNorm2d(out_channels)
        self.act = act_layer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


class SqueezeExcite(nn.Module):
    """Channel attention: global pool, bottleneck MLP, sigmoid gate."""

    def __init__(self, channels: int, reduction: float = 0.25) -> None:
        super().__init__()
        hidden = max(8, int(channels * reduction))
        self.reduce = nn.Conv2d(channels, hidden, 1)
        self.expand = nn.Conv2d(hidden, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = x.mean((2, 3), keepdim=True)
        gate = self.expand(F.silu(self.reduce(gate)))
        return x * gate.sigmoid()


class ResidualBlock(nn.Module):
    """Inverted bottleneck: 1x1 expand, depthwise 3x3, squeeze-excite, 1x1 project."""

    def __init__(self, channels: int, expansion: int = 4, drop_path: float = 0.0, use_se: bool = True) -> None:
        super().__init__()
        hidden = channels * expansion
        self.expand = ConvBlock(channels, hidden, kernel_size=1)
        self.depthwise = ConvBlock(hidden, hidden, kernel_size=3, groups=hidden)
        self.se = SqueezeExcite(hidden) if use_se else nn.Identity()
        self.project = nn.Conv2d(hidden, channels, 1, bias=False)
        self.norm = nn.BatchNorm2d(channels)
        self.drop_path = drop_path

    def _drop_path(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.drop_path == 0.0:
            return x
        keep = 1.0 - self.drop_path
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask / keep

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.depthwise(self.expand(x))
        x = self.norm(self.project(self.se(x)))
        return shortcut + self._drop_path(x)


class Mlp(nn.Module):
    """Two-layer feed-forward network of a transformer block."""

    def __init__(self, dim: int, hidden_dim: int, drop: float = 0.0, act_layer: Callable[[], nn.Module] = nn.GELU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop = drop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.fc1(x))
        x = F.dropout(x, self.drop, training=self.training)
        x = self.fc2(x)
        return F.dropout(x, self.drop, training=self.training)


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, drop: float = 0.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = MultiHeadAttention(dim, num_heads, proj_drop=drop)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class HybridNet(nn.Module):
    """Conv stages at high resolution, window attention in the middle, global attention last."""

    def __init__(
        self,
        num_classes: int = 1000,
        in_chans: int = 3,
        widths: Sequence[int] = (48, 96, 192),
        depths: Sequence[int] = (2, 2, 4),
        num_heads: int = 6,
        grad_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        self.grad_checkpointing = grad_checkpointing
        self.stem = nn.Sequential(
            ConvBlock(in_chans, widths[0] // 2, stride=2),
            ConvBlock(widths[0] // 2, widths[0], stride=2),
        )
        self.conv_stage = nn.Sequential(*[ResidualBlock(widths[0]) for _ in range(depths[0])])
        self.down1 = nn.Sequential(LayerNorm2d(widths[0]), nn.Conv2d(widths[0], widths[1], 2, stride=2))
        self.window_stage = nn.ModuleList([WindowBlock(widths[1], 7, num_heads) for _ in range(depths[1])])
        self.down2 = nn.Sequential(LayerNorm2d(widths[1]), nn.Conv2d(widths[1], widths[2], 2, stride=2))
        self.blocks = nn.ModuleList([TransformerBlock(widths[2], num_heads) for _ in range(depths[2])])
        self.norm = nn.LayerNorm(widths[2])
        self.head = ClassifierHead(widths[2], num_classes)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_stage(self.stem(x))
        x = self.down1(x).permute(0, 2, 3, 1)
        for block in self.window_stage:
            x = block(x)
        x = self.down2(x.permute(0, 3, 1, 2))
        x = x.flatten(2).transpose(1, 2)
        for block in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x)
            else:
                x = block.forward(x)
        return self.norm(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(x).mean(dim=1))

    def clip_layer_scales(self, max_value: float = 10.0) -> None:
        """Keep the norm gains bounded; large gains make fp16 training overflow."""
        for name, param in self.named_parameters():
            if name.endswith("norm.weight"):
                param.data.clamp(-max_value, max_value)


def build_model(variant: str = "small", **kwargs) -> HybridNet:
    configs = {
        "tiny": dict(widths=(32, 64, 128), depths=(1, 2, 2), num_heads=4),
        "small": dict(widths=(48, 96, 192), depths=(2, 2, 4), num_heads=6),
        "base": dict(widths=(64, 128, 256), depths=(2, 4, 8), num_heads=8),
    }
    if variant not in configs:
        raise KeyError(f"unknown variant {variant!r}; choose one of {sorted(configs)}")
    return HybridNet(**{**configs[variant], **kwargs})


model_tiny = partial(build_model, "tiny")
model_small = partial(build_model, "small")
