"""A linear layer with a learnable sparsity mask, used in a pruning experiment."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IN_FEATURES = 30
HIDDEN = 16
N_CLASSES = 3


class MaskedLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * in_features ** -0.5)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.mask_logits = nn.Parameter(torch.zeros(out_features, in_features))

    def forward(self, x):
        w = self.weight * torch.sigmoid(self.mask_logits)
        return x @ w + self.bias


class PrunableNet(nn.Module):
    def __init__(self, in_features, hidden, n_classes):
        super().__init__()
        self.layer1 = MaskedLinear(in_features, hidden)
        self.layer2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.layer2(F.relu(self.layer1(x)))

    def sparsity_penalty(self):
        return torch.sigmoid(self.layer1.mask_logits).mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = PrunableNet(IN_FEATURES, HIDDEN, N_CLASSES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(8, IN_FEATURES)
    y = torch.randint(0, N_CLASSES, (8,))
    for step in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y) + 0.01 * model.sparsity_penalty()
        loss.backward()
        optimizer.step()
    print("loss", loss.item())
