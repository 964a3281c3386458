"""Per-sample standardisation of sensor readings before an MLP anomaly scorer."""
import torch
import torch.nn as nn

N_SENSORS = 20
HIDDEN = 64


def standardize(features, eps=1e-5):
    centered = features - features.mean(dim=1)
    return centered / (centered.pow(2).mean(dim=1, keepdim=True).sqrt() + eps)


class AnomalyScorer(nn.Module):
    def __init__(self, n_sensors, hidden):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(n_sensors, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden // 2),
            nn.ReLU(),
        )
        self.score = nn.Linear(hidden // 2, 1)

    def forward(self, readings):
        z = standardize(readings)
        return self.score(self.encoder(z)).squeeze(-1)


def train_step(model, optimizer, readings, labels):
    optimizer.zero_grad()
    logits = model(readings)
    loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
    loss.backward()
    optimizer.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = AnomalyScorer(N_SENSORS, HIDDEN)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(32, N_SENSORS), torch.randint(0, 2, (32,)).float()) for _ in range(2)]
    for readings, labels in batches:
        print("loss", train_step(model, optimizer, readings, labels))
