"""Classify accelerometer windows with an LSTM over time."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

N_CHANNELS = 6
WINDOW = 25
HIDDEN = 32
N_ACTIVITIES = 4


class ActivityLSTM(nn.Module):
    def __init__(self, n_channels, hidden, n_classes):
        super().__init__()
        self.lstm = nn.LSTM(n_channels, hidden, num_layers=1, batch_first=True)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(hidden, n_classes)

    def forward(self, x):
        # x: (batch, time, channels)
        _, (h_n, _) = self.lstm(x)
        last = self.dropout(h_n[-1])
        return self.classifier(last)


def make_loader(n, batch_size):
    windows = torch.randn(n, WINDOW, N_CHANNELS)
    labels = torch.randint(0, N_ACTIVITIES, (n,))
    return DataLoader(TensorDataset(windows, labels), batch_size=batch_size)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ActivityLSTM(N_CHANNELS, HIDDEN, N_ACTIVITIES)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for windows, labels in make_loader(16, batch_size=8):
        optimizer.zero_grad()
        logits = model(windows)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
    print("loss", loss.item())
