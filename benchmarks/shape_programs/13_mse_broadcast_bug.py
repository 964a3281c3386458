"""Regress house prices from a handful of numeric features (smoke test run)."""
import warnings

import torch
import torch.nn as nn

FEATURES = ["rooms", "area", "age", "distance", "floor"]


class PriceModel(nn.Module):
    def __init__(self, n_features, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def make_data(n):
    x = torch.randn(n, len(FEATURES))
    true_w = torch.linspace(-1.0, 1.0, len(FEATURES))
    y = x @ true_w + 0.1 * torch.randn(n)
    return x, y


if __name__ == "__main__":
    # the smoke test treats any UserWarning as a failure
    warnings.simplefilter("error", UserWarning)
    torch.manual_seed(0)
    x, y = make_data(64)
    model = PriceModel(len(FEATURES))
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        optimizer.zero_grad()
        pred = model(x)
        loss = criterion(pred, y)
        loss.backward()
        optimizer.step()
    print("mse", loss.item())
