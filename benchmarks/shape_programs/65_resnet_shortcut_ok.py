"""CIFAR-style ResNet with basic blocks; a few training steps on random images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLASSES = 10
# (out_channels, stride) for each stage
STAGES = [(16, 1), (32, 2), (32, 2)]


class BasicBlock(nn.Module):
    def __init__(self, in_ch, out_ch, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(16), nn.ReLU())
        blocks, in_ch = [], 16
        for out_ch, stride in STAGES:
            blocks.append(BasicBlock(in_ch, out_ch, stride))
            in_ch = out_ch
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(in_ch, n_classes)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return self.fc(h)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ResNet(N_CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for step in range(2):
        x = torch.randn(8, 3, 32, 32)
        y = torch.randint(0, N_CLASSES, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss={loss.item():.3f}")
