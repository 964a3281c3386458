import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

N_FEATURES = 8
N_CLASSES = 4


def load_table(n_rows):
    """Fake a CSV-like table: feature columns followed by an integer label column."""
    feats = torch.randn(n_rows, N_FEATURES)
    labels = torch.randint(0, N_CLASSES, (n_rows, 1)).float()
    return torch.cat([feats, labels], dim=1)


class Classifier(nn.Module):
    def __init__(self, in_dim, hidden, n_classes):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes)
        )

    def forward(self, x):
        return F.log_softmax(self.net(x), dim=-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    table = load_table(200)
    features = table[:, :-1]
    targets = table[:, -1].long()
    loader = DataLoader(TensorDataset(features, targets), batch_size=16, shuffle=True)

    model = Classifier(N_FEATURES, 32, N_CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        correct = 0
        for xb, yb in loader:
            log_probs = model(xb)
            loss = F.nll_loss(log_probs, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (log_probs.argmax(dim=1) == yb).sum().item()
        print(f"epoch {epoch}: acc {correct / len(features):.3f}")
