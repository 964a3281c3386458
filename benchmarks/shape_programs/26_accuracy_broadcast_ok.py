"""Train a small classifier on toy clusters and report validation accuracy."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_FEATURES = 8
N_CLASSES = 3


class ClusterNet(nn.Module):
    def __init__(self, n_features, n_classes, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_clusters(n, generator):
    centers = torch.randn(N_CLASSES, N_FEATURES, generator=generator) * 3
    labels = torch.randint(0, N_CLASSES, (n,), generator=generator)
    points = centers[labels] + torch.randn(n, N_FEATURES, generator=generator)
    return points, labels


def accuracy(logits, labels):
    preds = logits.argmax(dim=1)
    correct = (preds == labels).float()
    return correct.sum().item() / labels.numel()


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    x, y = make_clusters(60, gen)
    model = ClusterNet(N_FEATURES, N_CLASSES)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        acc = accuracy(model(x), y)
    print("accuracy", acc)
    assert 0.0 <= acc <= 1.0, f"accuracy out of range: {acc}"
