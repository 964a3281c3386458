import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_ch, out_ch):
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False), nn.BatchNorm2d(out_ch), nn.ReLU(inplace=True),
        nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False), nn.BatchNorm2d(out_ch), nn.ReLU(inplace=True),
    )


class TinyUNet(nn.Module):
    def __init__(self, in_ch=3, n_classes=4, base=16):
        super().__init__()
        self.enc1 = conv_block(in_ch, base)
        self.enc2 = conv_block(base, base * 2)
        self.bottleneck = conv_block(base * 2, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, 2, stride=2)
        self.dec2 = conv_block(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec1 = conv_block(base * 2, base)
        self.head = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bottleneck(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


def soft_dice_loss(logits, masks, n_classes, eps=1e-6):
    """logits (B, C, H, W), masks (B, H, W) of class ids."""
    probs = logits.softmax(dim=1)
    target = F.one_hot(masks, n_classes).permute(0, 3, 1, 2).float()
    inter = (probs * target).sum(dim=(2, 3))
    union = probs.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    dice = (2 * inter + eps) / (union + eps)
    return 1 - dice.mean()


def make_batch(batch_size, size, n_classes):
    images = torch.randn(batch_size, 3, size, size)
    # class id of each pixel depends on which quadrant-ish band it falls in
    ys = torch.arange(size).view(size, 1).expand(size, size)
    xs = torch.arange(size).view(1, size).expand(size, size)
    base = ((ys * n_classes) // size + (xs * 2) // size) % n_classes
    masks = base.unsqueeze(0).repeat(batch_size, 1, 1)
    return images, masks


if __name__ == "__main__":
    torch.manual_seed(0)
    n_classes = 4
    model = TinyUNet(n_classes=n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images, masks = make_batch(4, 64, n_classes)
    for step in range(2):
        logits = model(images)
        loss = F.cross_entropy(logits, masks) + soft_dice_loss(logits, masks, n_classes)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
