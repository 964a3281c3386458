import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    vocab_size: int = 512
    dim: int = 128
    n_layers: int = 2
    n_heads: int = 8
    n_kv_heads: int = 2          # grouped-query attention: 4 query heads share each k/v head
    max_seq_len: int = 64


def repeat_kv(x, n_rep):
    """(B, n_kv_heads, T, hd) -> (B, n_kv_heads * n_rep, T, hd)."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.n_rep = args.n_heads // args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, causal_mask):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.n_rep)
        v = repeat_kv(v, self.n_rep)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)       # (B, H, T, T)
        scores = scores.masked_fill(causal_mask[:T, :T], float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = attn @ v                                                    # (B, H, T, hd)
        return self.wo(out.transpose(1, 2).reshape(B, T, -1))


class Block(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.norm1 = nn.LayerNorm(args.dim)
        self.attn = Attention(args)
        self.norm2 = nn.LayerNorm(args.dim)
        self.mlp = nn.Sequential(nn.Linear(args.dim, 4 * args.dim), nn.GELU(), nn.Linear(4 * args.dim, args.dim))

    def forward(self, x, mask):
        x = x + self.attn(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.tok = nn.Embedding(args.vocab_size, args.dim)
        self.pos = nn.Embedding(args.max_seq_len, args.dim)
        self.blocks = nn.ModuleList([Block(args) for _ in range(args.n_layers)])
        self.norm = nn.LayerNorm(args.dim)
        self.lm_head = nn.Linear(args.dim, args.vocab_size, bias=False)
        mask = torch.triu(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool), 1)
        self.register_buffer("causal_mask", mask)

    def forward(self, idx):
        T = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(T))
        for block in self.blocks:
            x = block(x, self.causal_mask)
        return self.lm_head(self.norm(x))


if __name__ == "__main__":
    torch.manual_seed(0)
    args = ModelArgs()
    model = TinyLM(args)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(0, args.vocab_size, (4, 33))
    inputs, targets = data[:, :-1], data[:, 1:]
    for step in range(2):
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab_size), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
