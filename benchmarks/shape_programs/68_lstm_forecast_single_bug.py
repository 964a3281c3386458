"""LSTM forecaster with static covariates; trained on batches, then used on one series."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--window", type=int, default=24)
    p.add_argument("--horizon", type=int, default=6)
    p.add_argument("--n-features", type=int, default=3)
    p.add_argument("--n-static", type=int, default=5)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=16)
    return p.parse_args([])


class Forecaster(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.lstm = nn.LSTM(args.n_features, args.hidden, batch_first=True)
        self.static_proj = nn.Linear(args.n_static, 8)
        self.head = nn.Linear(args.hidden + 8, args.horizon)

    def forward(self, x, static):
        _, (h_n, _) = self.lstm(x)  # h_n: (1, B, hidden)
        last = h_n.squeeze()
        z = torch.cat([last, F.relu(self.static_proj(static))], dim=1)
        return self.head(z)


if __name__ == "__main__":
    torch.manual_seed(0)
    args = get_args()
    model = Forecaster(args)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(3):
        x = torch.randn(args.batch_size, args.window, args.n_features)
        static = torch.randn(args.batch_size, args.n_static)
        y = torch.randn(args.batch_size, args.horizon)
        loss = F.mse_loss(model(x, static), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        series = torch.randn(1, args.window, args.n_features)
        covariates = torch.randn(1, args.n_static)
        forecast = model(series, covariates)
    print("train loss", loss.item(), "forecast", forecast.shape)
