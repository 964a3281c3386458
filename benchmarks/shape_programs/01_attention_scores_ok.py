"""Single-head self-attention over a short sequence, then a small classifier."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

D_MODEL = 48
SEQ_LEN = 10
N_CLASSES = 3


class SelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.scale = 1.0 / math.sqrt(d_model)

    def forward(self, x):
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        weights = F.softmax(scores, dim=-1)
        return weights @ v


class AttentionClassifier(nn.Module):
    def __init__(self, d_model, n_classes):
        super().__init__()
        self.attn = SelfAttention(d_model)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, x):
        h = self.norm(x + self.attn(x))
        return self.head(h.mean(dim=1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = AttentionClassifier(D_MODEL, N_CLASSES)
    x = torch.randn(4, SEQ_LEN, D_MODEL)
    y = torch.randint(0, N_CLASSES, (4,))
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    print("loss", loss.item())
