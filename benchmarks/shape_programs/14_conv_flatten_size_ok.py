"""A LeNet-style digit classifier (layer sizes taken from a CIFAR tutorial)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

IMAGE_SIZE = 28
N_CLASSES = 10


class DigitNet(nn.Module):
    def __init__(self, in_channels=1, n_classes=N_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        # two 2x2 poolings: 28 -> 14 -> 7
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, n_classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    images = torch.randn(16, 1, IMAGE_SIZE, IMAGE_SIZE)
    digits = torch.randint(0, N_CLASSES, (16,))
    loader = DataLoader(TensorDataset(images, digits), batch_size=8, shuffle=True)
    model = DigitNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for batch, target in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(batch), target)
        loss.backward()
        optimizer.step()
    print("loss", loss.item())
