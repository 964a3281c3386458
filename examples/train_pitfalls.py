"""A small training script with classic PyTorch pitfalls: `torchlint check examples/` finds them."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int):
        super().__init__()
        self.body = nn.Linear(features, classes)
        self.act = nn.Softmax()

    def forward(self, x):
        return self.body(x)


def train(steps: int = 10) -> None:
    model = Classifier(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = torch.Tensor(3)
    for _ in range(steps):
        x = torch.randn(8, 16)
        target = torch.randint(0, 4, (8,))
        log_probs = F.softmax(model(x), dim=-1).log()
        loss = F.nll_loss(log_probs, target)
        loss.backward()
        optimizer.step()
    print(scale.shape)


if __name__ == "__main__":
    train()
