"""A bilinear user-item scorer for implicit-feedback recommendation."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_USERS = 100
N_ITEMS = 300
USER_DIM = 24
ITEM_DIM = 16


class BilinearRecommender(nn.Module):
    def __init__(self, n_users, n_items, user_dim, item_dim):
        super().__init__()
        self.users = nn.Embedding(n_users, user_dim)
        self.items = nn.Embedding(n_items, item_dim)
        self.interaction = nn.Parameter(torch.randn(user_dim, item_dim) * 0.1)
        self.item_bias = nn.Embedding(n_items, 1)

    def score(self, u, v):
        # u: (B, user_dim), v: (B, item_dim) -> (B,)
        return torch.einsum("bd,de,be->b", u, self.interaction, v)

    def forward(self, user_ids, item_ids):
        u = self.users(user_ids)
        v = self.items(item_ids)
        return self.score(u, v) + self.item_bias(item_ids).squeeze(-1)


def bpr_loss(model, users, pos_items, neg_items):
    pos = model(users, pos_items)
    neg = model(users, neg_items)
    return -F.logsigmoid(pos - neg).mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = BilinearRecommender(N_USERS, N_ITEMS, USER_DIM, ITEM_DIM)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    users = torch.randint(0, N_USERS, (8,))
    pos_items = torch.randint(0, N_ITEMS, (8,))
    neg_items = torch.randint(0, N_ITEMS, (8,))
    optimizer.zero_grad()
    loss = bpr_loss(model, users, pos_items, neg_items)
    loss.backward()
    optimizer.step()
    print("bpr", loss.item())
