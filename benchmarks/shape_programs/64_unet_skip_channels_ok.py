"""Small U-Net for binary segmentation masks on 32x32 images."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
    )


class Up(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_ch, out_ch, kernel_size=2, stride=2)
        self.conv1 = nn.Conv2d(2 * out_ch, out_ch, 3, padding=1)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)

    def forward(self, x, skip):
        x = self.up(x)
        x = torch.cat([skip, x], dim=1)
        x = F.relu(self.conv1(x))
        return F.relu(self.conv2(x))


class UNet(nn.Module):
    def __init__(self, in_ch=3, base=16):
        super().__init__()
        self.enc1 = double_conv(in_ch, base)
        self.enc2 = double_conv(base, base * 2)
        self.bottleneck = double_conv(base * 2, base * 4)
        self.up2 = Up(base * 4, base * 2)
        self.up1 = Up(base * 2, base)
        self.head = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)  # (B, 16, 32, 32)
        e2 = self.enc2(F.max_pool2d(e1, 2))  # (B, 32, 16, 16)
        b = self.bottleneck(F.max_pool2d(e2, 2))  # (B, 64, 8, 8)
        d2 = self.up2(b, e2)
        d1 = self.up1(d2, e1)
        return self.head(d1)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = UNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(4, 3, 32, 32)
    masks = (torch.rand(4, 1, 32, 32) > 0.5).float()
    for step in range(2):
        logits = model(images)
        loss = F.binary_cross_entropy_with_logits(logits, masks)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, "bce", loss.item())
