"""A small GPT-style block with learned positional embeddings."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 120
D_MODEL = 32
BLOCK_SIZE = 16
N_HEADS = 4


class TinyGPT(nn.Module):
    def __init__(self, vocab, d_model, block_size, n_heads):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, block_size, d_model))
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ln = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos[:, :T]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        h, _ = self.attn(x, x, x, attn_mask=causal, need_weights=False)
        return self.lm_head(self.ln(x + h))


def get_batch(data, batch_size, length):
    starts = torch.randint(0, data.numel() - length - 1, (batch_size,))
    xb = torch.stack([data[s : s + length] for s in starts])
    yb = torch.stack([data[s + 1 : s + length + 1] for s in starts])
    return xb, yb


if __name__ == "__main__":
    torch.manual_seed(0)
    corpus = torch.randint(0, VOCAB, (500,))
    model = TinyGPT(VOCAB, D_MODEL, BLOCK_SIZE, N_HEADS)
    xb, yb = get_batch(corpus, batch_size=4, length=BLOCK_SIZE)
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, VOCAB), yb.view(-1))
    loss.backward()
    print("loss", loss.item())
