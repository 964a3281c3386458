import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_ch, out_ch):
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, kernel_size=3, padding=1),
        nn.BatchNorm2d(out_ch),
        nn.ReLU(inplace=True),
    )


class TinyUNet(nn.Module):
    def __init__(self, in_ch=1, base=16, n_classes=2):
        super().__init__()
        self.enc1 = conv_block(in_ch, base)
        self.enc2 = conv_block(base, base * 2)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = conv_block(base * 2, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, kernel_size=2, stride=2)
        self.dec2 = conv_block(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, kernel_size=2, stride=2)
        self.dec1 = conv_block(base * 2, base)
        self.head = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        e1 = self.enc1(x)                  # (B, base, H, W)
        e2 = self.enc2(self.pool(e1))      # (B, 2*base, H/2, W/2)
        b = self.bottleneck(self.pool(e2))
        d2 = self.up2(b)
        if d2.shape[-2:] != e2.shape[-2:]:
            d2 = F.interpolate(d2, size=e2.shape[-2:], mode="nearest")
        d2 = self.dec2(torch.cat([d2, e2], dim=1))
        d1 = self.up1(d2)
        d1 = self.dec1(torch.cat([d1, e1], dim=1))
        return self.head(d1)


# cell microscopy crops come out of the preprocessing at 58x58
CROP = 58
BATCH = 2

if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyUNet(in_ch=1, base=8, n_classes=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(BATCH, 1, CROP, CROP)
    masks = torch.randint(0, 2, (BATCH, CROP, CROP))
    for step in range(2):
        logits = model(images)
        loss = F.cross_entropy(logits, masks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")
