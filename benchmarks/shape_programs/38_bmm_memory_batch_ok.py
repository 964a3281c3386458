import math

import torch
import torch.nn as nn

D_MODEL = 64
N_HEADS = 4


def split_heads(x, n_heads):
    """(B, T, D) -> (B * n_heads, T, D // n_heads)"""
    B, T, D = x.shape
    x = x.view(B, T, n_heads, D // n_heads).transpose(1, 2)
    return x.reshape(B * n_heads, T, D // n_heads)


class CrossAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, text, memory):
        B, T, D = text.shape
        q = split_heads(self.q(text), self.n_heads)
        k, v = self.kv(memory).chunk(2, dim=-1)
        k, v = split_heads(k, self.n_heads), split_heads(v, self.n_heads)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(D // self.n_heads)
        out = torch.bmm(scores.softmax(dim=-1), v)
        out = out.view(B, self.n_heads, T, -1).transpose(1, 2).reshape(B, T, D)
        return self.proj(out)


if __name__ == "__main__":
    torch.manual_seed(0)
    image_encoder = nn.Sequential(nn.Conv2d(3, D_MODEL, 8, stride=8), nn.Flatten(2))
    attn = CrossAttention(D_MODEL, N_HEADS)

    # score several candidate captions against one image
    image = torch.randn(1, 3, 32, 32)
    memory = image_encoder(image).transpose(1, 2)      # (1, 16, D)
    captions = torch.randn(5, 12, D_MODEL)              # 5 candidate captions
    fused = attn(captions, memory.expand(captions.shape[0], -1, -1))
    print("fused:", tuple(fused.shape))
