import torch
import torch.nn as nn
import torch.nn.functional as F

STAGE_CHANNELS = (32, 64, 128)
SE_REDUCTION = 8
NUM_CLASSES = 10


class SqueezeExcite(nn.Module):
    """Channel attention: global-average-pool, bottleneck MLP, sigmoid gate per channel."""

    def __init__(self, channels, reduction=SE_REDUCTION):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        squeezed = x.mean(dim=(2, 3))                           # (B, C)
        gate = torch.sigmoid(self.fc2(F.relu(self.fc1(squeezed))))
        return x * gate


class SEConvStage(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.se = SqueezeExcite(out_ch)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.se(self.bn2(self.conv2(x)))
        return self.pool(F.relu(x))


class SENet(nn.Module):
    def __init__(self, in_ch=3, stages=STAGE_CHANNELS, num_classes=NUM_CLASSES):
        super().__init__()
        layers = []
        for ch in stages:
            layers.append(SEConvStage(in_ch, ch))
            in_ch = ch
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(in_ch, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SENet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    images = torch.randn(8, 3, 32, 32)
    labels = torch.randint(0, NUM_CLASSES, (8,))
    model.train()
    for step in range(2):
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        print("eval predictions", model(images[:4]).argmax(1).tolist())
