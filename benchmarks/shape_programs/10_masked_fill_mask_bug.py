"""Masked multi-head attention for padded batches of sentences."""
import torch
import torch.nn as nn
import torch.nn.functional as F

D_MODEL = 32
N_HEADS = 4
PAD = 0


def padding_mask(tokens):
    # True where the token is padding: (batch, time)
    return tokens == PAD


class MaskedAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.dk = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask):
        B, T, _ = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = q @ k.transpose(-2, -1) / self.dk ** 0.5
        scores = scores.masked_fill(mask, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, -1)
        return self.proj(out)


class Encoder(nn.Module):
    def __init__(self, vocab, d_model, n_heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.attn = MaskedAttention(d_model, n_heads)

    def forward(self, tokens):
        x = self.embed(tokens)
        return x + self.attn(x, padding_mask(tokens))


if __name__ == "__main__":
    torch.manual_seed(0)
    tokens = torch.randint(1, 100, (3, 9))
    tokens[0, 6:] = PAD
    tokens[2, 4:] = PAD
    model = Encoder(100, D_MODEL, N_HEADS)
    out = model(tokens)
    out.sum().backward()
    print(out.shape)
