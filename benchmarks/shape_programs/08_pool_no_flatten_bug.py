"""A small residual CNN for 10-class image classification."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLASSES = 10


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class SmallResNet(nn.Module):
    def __init__(self, width=32, n_classes=N_CLASSES):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.Sequential(ResidualBlock(width), ResidualBlock(width))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, n_classes)

    def forward(self, images):
        x = F.relu(self.stem(images))
        x = self.blocks(x)
        x = self.pool(x)
        return self.fc(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SmallResNet()
    images = torch.randn(2, 3, 16, 16)
    labels = torch.randint(0, N_CLASSES, (2,))
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    print(logits.shape, loss.item())
