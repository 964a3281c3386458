import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, in_dim, hidden_dims, out_dim, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList()
        prev = in_dim
        for h in hidden_dims:
            self.layers.append(nn.Linear(prev, h))
        self.out = nn.Linear(hidden_dims[-1], out_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        for layer in self.layers:
            x = self.dropout(F.relu(layer(x)))
        return self.out(x)


def make_regression_data(n_samples, n_features, noise=0.1):
    X = torch.randn(n_samples, n_features)
    w = torch.randn(n_features, 1)
    y = X @ w + noise * torch.randn(n_samples, 1)
    return X, y


if __name__ == "__main__":
    torch.manual_seed(0)
    N_FEATURES = 10
    X, y = make_regression_data(256, N_FEATURES)
    loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
    model = MLP(N_FEATURES, hidden_dims=[64, 32, 16], out_dim=1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        total = 0.0
        for xb, yb in loader:
            loss = F.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        print(f"epoch {epoch}: mse {total / len(X):.4f}")
