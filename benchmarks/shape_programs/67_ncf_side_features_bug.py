"""Neural collaborative filtering with item genre side features, trained on implicit feedback."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class Config:
    n_users: int = 100
    n_items: int = 200
    n_genres: int = 8
    user_dim: int = 32
    item_dim: int = 32
    genre_dim: int = 16
    hidden: int = 64


class NCF(nn.Module):
    def __init__(self, cfg: Config, item_genres):
        super().__init__()
        self.user_emb = nn.Embedding(cfg.n_users, cfg.user_dim)
        self.item_emb = nn.Embedding(cfg.n_items, cfg.item_dim)
        self.register_buffer("item_genres", item_genres)  # (n_items, n_genres) multi-hot
        self.genre_proj = nn.Linear(cfg.n_genres, cfg.genre_dim)
        self.fc1 = nn.Linear(cfg.user_dim + cfg.item_dim, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, 1)

    def forward(self, users, items):
        u = self.user_emb(users)
        i = self.item_emb(items)
        g = F.relu(self.genre_proj(self.item_genres[items]))
        x = torch.cat([u, i, g], dim=-1)
        x = F.relu(self.fc1(x))
        return self.fc2(x).squeeze(-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = Config()
    genres = (torch.rand(cfg.n_items, cfg.n_genres) < 0.2).float()
    users = torch.randint(0, cfg.n_users, (256,))
    items = torch.randint(0, cfg.n_items, (256,))
    clicks = (torch.rand(256) < 0.3).float()
    loader = DataLoader(TensorDataset(users, items, clicks), batch_size=64, shuffle=True)
    model = NCF(cfg, genres)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for u, i, c in loader:
        loss = F.binary_cross_entropy_with_logits(model(u, i), c)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("last batch loss", loss.item())
