import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

WINDOW = 24          # one day of hourly readings
N_STEPS = 24 * 30    # a month of data
BATCH_SIZE = 32
EPOCHS = 2


def make_series(n_steps, period=24.0, noise=0.1):
    """A synthetic hourly load curve: daily and weekly seasonality plus noise."""
    t = torch.arange(n_steps, dtype=torch.float32)
    daily = torch.sin(2 * math.pi * t / period)
    weekly = 0.3 * torch.sin(2 * math.pi * t / (7 * period))
    return daily + weekly + noise * torch.randn(n_steps)


def make_windows(series, window):
    """Inputs are sliding windows of `window` steps; the target is the next value after each window."""
    inputs = series.unfold(0, window, 1)
    targets = series[window:]
    return TensorDataset(inputs, targets)


class LSTMForecaster(nn.Module):
    def __init__(self, hidden=32, num_layers=1):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, window):
        out, _ = self.lstm(window.unsqueeze(-1))   # (B, W, H)
        return self.head(out[:, -1]).squeeze(-1)   # (B,)


def train(model, loader, epochs):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        total = 0.0
        for x, y in loader:
            pred = model(x)
            loss = loss_fn(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(x)
        print(f"epoch {epoch}: mse {total / len(loader.dataset):.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    series = make_series(N_STEPS)
    mean, std = series.mean(), series.std()
    series = (series - mean) / std
    dataset = make_windows(series, WINDOW)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)
    model = LSTMForecaster()
    train(model, loader, EPOCHS)
