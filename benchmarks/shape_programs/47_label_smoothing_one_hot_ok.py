import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

# Credit-risk grades A-D, plus E ("unrated"), which the model must be able to output
# but which never occurs in the historical training data.
N_CLASSES = 5
CAT_CARDINALITIES = [7, 12, 4]     # region, product, channel
N_CONTINUOUS = 6
LABEL_SMOOTHING = 0.1


def smooth_one_hot(labels, eps):
    one_hot = F.one_hot(labels, num_classes=N_CLASSES).float()
    n = one_hot.size(1)
    return one_hot * (1.0 - eps) + eps / n


class TabularClassifier(nn.Module):
    def __init__(self, cardinalities, n_cont, n_classes, emb_dim=8, hidden=64):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cardinalities])
        self.cont_norm = nn.BatchNorm1d(n_cont)
        in_dim = emb_dim * len(cardinalities) + n_cont
        self.mlp = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x_cat, x_cont):
        embs = [emb(x_cat[:, i]) for i, emb in enumerate(self.embeddings)]
        return self.mlp(torch.cat(embs + [self.cont_norm(x_cont)], dim=1))


def make_data(n_rows):
    x_cat = torch.stack([torch.randint(0, c, (n_rows,)) for c in CAT_CARDINALITIES], dim=1)
    x_cont = torch.randn(n_rows, N_CONTINUOUS)
    score = x_cont[:, 0] + 0.5 * x_cont[:, 1] + 0.1 * x_cat[:, 0].float()
    grades = torch.bucketize(score, torch.tensor([-0.5, 0.3, 1.0]))   # grades 0..3 only
    return x_cat, x_cont, grades


def train(model, loader, epochs=2):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = 0.0
        for x_cat, x_cont, y in loader:
            logits = model(x_cat, x_cont)
            loss = F.cross_entropy(logits, smooth_one_hot(y, LABEL_SMOOTHING))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    x_cat, x_cont, y = make_data(512)
    loader = DataLoader(TensorDataset(x_cat, x_cont, y), batch_size=128, shuffle=True)
    model = TabularClassifier(CAT_CARDINALITIES, N_CONTINUOUS, N_CLASSES)
    train(model, loader)
