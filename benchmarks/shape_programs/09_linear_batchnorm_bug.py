"""Tabular churn prediction with a BatchNorm MLP."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

N_FEATURES = 20
HIDDEN = 64


class ChurnMLP(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.fc1 = nn.Linear(n_features, hidden)
        self.bn1 = nn.BatchNorm1d(2 * hidden)
        self.fc2 = nn.Linear(hidden, hidden // 2)
        self.bn2 = nn.BatchNorm1d(hidden // 2)
        self.out = nn.Linear(hidden // 2, 1)
        self.act = nn.ReLU()

    def forward(self, x):
        h = self.fc1(x)
        h = self.act(self.bn1(h))
        h = self.act(self.bn2(self.fc2(h)))
        return self.out(h)


def fit_one_epoch(model, loader, optimizer):
    criterion = nn.BCEWithLogitsLoss()
    model.train()
    total = 0.0
    for features, churned in loader:
        optimizer.zero_grad()
        loss = criterion(model(features), churned)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(40, N_FEATURES)
    y = torch.randint(0, 2, (40, 1)).float()
    loader = DataLoader(TensorDataset(x, y), batch_size=20)
    model = ChurnMLP(N_FEATURES, HIDDEN)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print("epoch loss", fit_one_epoch(model, loader, optimizer))
