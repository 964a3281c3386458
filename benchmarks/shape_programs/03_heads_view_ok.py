"""A one-layer transformer encoder for token classification, written by hand."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = F.softmax(q @ k.transpose(-2, -1) / self.head_dim ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)


class TokenTagger(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_tags):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.tagger = nn.Linear(d_model, n_tags)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.attn(h)
        h = h + self.ff(h)
        return self.tagger(h)


if __name__ == "__main__":
    torch.manual_seed(0)
    vocab_size, n_tags = 200, 5
    model = TokenTagger(vocab_size, d_model=100, n_heads=4, n_tags=n_tags)
    tokens = torch.randint(0, vocab_size, (2, 7))
    tags = torch.randint(0, n_tags, (2, 7))
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, n_tags), tags.reshape(-1))
    loss.backward()
    print("loss", loss.item())
