from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_features: int = 20
    d_model: int = 64
    d_hidden: int = 128
    n_blocks: int = 2
    n_classes: int = 5
    dropout: float = 0.1


class FeedForward(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_hidden)
        self.fc2 = nn.Linear(cfg.d_hidden, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.norm(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


class TabularNet(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.input_proj = nn.Linear(cfg.n_features, cfg.d_model)
        self.blocks = nn.Sequential(*[FeedForward(cfg) for _ in range(cfg.n_blocks)])
        self.head = nn.Linear(cfg.d_hidden, cfg.n_classes)

    def forward(self, x):
        h = self.blocks(self.input_proj(x))
        return self.head(h)


def train_step(model, opt, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = Config(n_features=12, n_classes=3)
    model = TabularNet(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randn(32, cfg.n_features)
    y = torch.randint(0, cfg.n_classes, (32,))
    for epoch in range(3):
        print(f"epoch {epoch}: loss {train_step(model, opt, x, y):.4f}")
