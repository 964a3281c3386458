"""Patch embedding for a tiny vision transformer on 32x32 RGB images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG = 32
PATCH = 8
CHANNELS = 3
DIM = 64


def patchify(images, patch):
    B, C, H, W = images.shape
    gh, gw = H // patch, W // patch
    x = images.reshape(B, C, gh, patch, gw, patch)
    x = x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, gh * gw, patch * patch)


class TinyViT(nn.Module):
    def __init__(self, img, patch, channels, dim, n_classes):
        super().__init__()
        self.patch = patch
        n_patches = (img // patch) ** 2
        self.to_embedding = nn.Linear(channels * patch * patch, dim)
        self.pos = nn.Parameter(torch.zeros(1, n_patches, dim))
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=2 * dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, images):
        tokens = self.to_embedding(patchify(images, self.patch)) + self.pos
        return self.head(self.encoder(tokens).mean(dim=1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyViT(IMG, PATCH, CHANNELS, DIM, n_classes=5)
    images = torch.randn(2, CHANNELS, IMG, IMG)
    labels = torch.tensor([1, 4])
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    print("loss", loss.item())
