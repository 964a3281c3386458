import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

N_USERS = 200
N_ITEMS = 500
EMB_DIM = 32
N_NEGATIVES = 4
BATCH_SIZE = 64


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, dim):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim)
        self.item_emb = nn.Embedding(n_items, dim)
        self.item_bias = nn.Embedding(n_items, 1)
        nn.init.normal_(self.user_emb.weight, std=0.05)
        nn.init.normal_(self.item_emb.weight, std=0.05)
        nn.init.zeros_(self.item_bias.weight)

    def bpr_loss(self, users, pos_items, neg_items):
        """users (B,), pos_items (B,), neg_items (B, K): every positive is ranked against K negatives."""
        u = self.user_emb(users)                                   # (B, D)
        p = self.item_emb(pos_items)                               # (B, D)
        n = self.item_emb(neg_items)                               # (B, K, D)
        pos_scores = (u * p).sum(-1) + self.item_bias(pos_items).squeeze(-1)    # (B,)
        neg_scores = (u.unsqueeze(1) * n).sum(-1) + self.item_bias(neg_items).squeeze(-1)    # (B, K)
        return -F.logsigmoid(pos_scores.unsqueeze(1) - neg_scores).mean()

    @torch.no_grad()
    def recommend(self, user, k=10):
        scores = self.item_emb.weight @ self.user_emb.weight[user] + self.item_bias.weight.squeeze(-1)
        return scores.topk(k).indices


def synthetic_interactions(n_users, n_items, per_user=8):
    users = torch.arange(n_users).repeat_interleave(per_user)
    # each user prefers a contiguous band of the catalogue
    centers = torch.randint(0, n_items, (n_users,)).repeat_interleave(per_user)
    items = (centers + torch.randint(-10, 11, (n_users * per_user,))) % n_items
    return users, items


def train(model, loader, epochs=2, l2=1e-5):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        total = 0.0
        for users, pos in loader:
            neg = torch.randint(0, N_ITEMS, (users.size(0), N_NEGATIVES))
            loss = model.bpr_loss(users, pos, neg)
            loss = loss + l2 * model.user_emb(users).pow(2).sum() / users.size(0)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: bpr {total / len(loader):.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    users, items = synthetic_interactions(N_USERS, N_ITEMS)
    loader = DataLoader(TensorDataset(users, items), batch_size=BATCH_SIZE, shuffle=True)
    model = MatrixFactorization(N_USERS, N_ITEMS, EMB_DIM)
    train(model, loader)
    print("top items for user 0:", model.recommend(0, k=5).tolist())
