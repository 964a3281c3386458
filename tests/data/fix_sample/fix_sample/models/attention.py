"""Attention layers: global multi-head self-attention, cross-attention and windowed attention."""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    """Self-attention over a token sequence of shape (B, N, C)."""

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = True,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
    ) -> None:
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.attn_drop = attn_drop
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).view(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)

        attn = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            attn = attn.masked_fill(~mask[:, None, None, :], float("-inf"))
        attn = attn.softmax(dim=-1)
        # Dropout on the attention weights, as in the original Transformer.
        attn = F.dropout(attn, p=self.attn_drop)

        x = (attn @ v).transpose(1, 2).view(B, N, C)
        x = self.proj.forward(x)
        return self.proj_drop(x)

    @torch.no_grad()
    def attention_map(self, x: torch.Tensor) -> torch.Tensor:
        """Head-averaged attention probabilities, for visualisation (B, N, N)."""
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, _ = qkv.unbind(0)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        return scores.softmax(dim=-1).mean(dim=1)

    def attention_log_probs(self, x: torch.Tensor) -> torch.Tensor:
        """Log attention probabilities, the target of attention distillation (B, H, N, N)."""
        B, N, C = x.shape
        q, k, _ = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        return torch.log(F.softmax(scores))


class CrossAttention(nn.Module):
    """Queries from one sequence attend to keys and values from another (the context)."""

    def __init__(self, dim: int, context_dim: Optional[int] = None, num_heads: int = 8, dropout: float = 0.0) -> None:
        super().__init__()
        context_dim = context_dim or dim
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(context_dim, dim * 2, bias=False)
        self.to_out = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(dropout))
        self.dropout = dropout

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q = self._split_heads(self.to_q(x))
        k, v = map(self._split_heads, self.to_kv(context).chunk(2, dim=-1))
        out = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0
        )
        out = out.transpose(1, 2).reshape(b, n, c)
        return self.to_out(out)


def window_partition(x: torch.Tensor, window_size: int) -> torch.Tensor:
    """Split a (B, H, W, C) feature map into non-overlapping windows of (ws * ws, C) tokens."""
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    windows = x.permute(0, 1, 3, 2, 4, 5).view(-1, window_size * window_size, C)
    return windows


def window_reverse(windows: torch.Tensor, window_size: int, height: int, width: int) -> torch.Tensor:
    """Inverse of `window_partition`: (num_windows * B, ws * ws, C) back to (B, H, W, C)."""
    channels = windows.shape[-1]
    x = windows.view(-1, height // window_size, width // window_size, window_size, window_size, channels)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, height, width, channels)
    return x


class WindowAttention(nn.Module):
    """Multi-head attention inside local windows, with a learned relative position bias."""

    def __init__(self, dim: int, window_size: int = 7, num_heads: int = 4) -> None:
        super().__init__()
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        num_offsets = (2 * window_size - 1) ** 2
        self.relative_position_bias_table = nn.Parameter(torch.zeros(num_offsets, num_heads))
        self.register_buffer("relative_position_index", self._relative_index(window_size), persistent=False)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        # The bias table is tiny; plain softmax over the last axis is all we need here.
        self.softmax = nn.Softmax()
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    @staticmethod
    def _relative_index(window_size: int) -> torch.Tensor:
        coords = torch.stack(torch.meshgrid(torch.arange(window_size), torch.arange(window_size), indexing="ij"))
        coords = coords.flatten(1)
        relative = coords[:, :, None] - coords[:, None, :]
        relative = relative.permute(1, 2, 0).contiguous()
        relative[:, :, 0] += window_size - 1
        relative[:, :, 1] += window_size - 1
        relative[:, :, 0] *= 2 * window_size - 1
        return relative.sum(-1)

    def _position_bias(self) -> torch.Tensor:
        area = self.window_size * self.window_size
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        return bias.view(area, area, -1).permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        B_, N, C = windows.shape
        qkv = self.qkv(windows).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = self.softmax(attn + self._position_bias())
        out = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(out)


class WindowBlock(nn.Module):
    """Pre-norm window attention over a (B, H, W, C) map, with a residual connection."""

    def __init__(self, dim: int, window_size: int = 7, num_heads: int = 4) -> None:
        super().__init__()
        self.window_size = window_size
        self.norm = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window_size, num_heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, H, W, C = x.shape
        pad_h = (self.window_size - H % self.window_size) % self.window_size
        pad_w = (self.window_size - W % self.window_size) % self.window_size
        shortcut = x
        x = F.pad(self.norm(x), (0, 0, 0, pad_w, 0, pad_h))
        Hp, Wp = H + pad_h, W + pad_w
        windows = self.attn(window_partition(x, self.window_size))
        x = window_reverse(windows, self.window_size, Hp, Wp)[:, :H, :W, :]
        return shortcut + x


def sinusoidal_embedding(positions: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """Fixed sin/cos embedding of scalar positions (timesteps, token indices): (N,) -> (N, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    angles = positions.float()[:, None] * freqs[None, :].to(positions.device)
    embedding = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)
    if dim % 2:
        embedding = F.pad(embedding, (0, 1))
    return embedding
