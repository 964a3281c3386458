import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE_SIZE = 32
PATCH_SIZE = 8
EMBED_DIM = 64


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)   # (B, N, D)


class TinyViT(nn.Module):
    def __init__(self, img_size=IMAGE_SIZE, patch_size=PATCH_SIZE, dim=EMBED_DIM,
                 depth=2, heads=4, num_classes=10):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, dim)
        n = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.patch_embed(img)
        x = torch.cat([self.cls_token, x], dim=1)
        x = self.encoder(x + self.pos_embed)
        return self.head(x[:, 0])


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyViT()
    images = torch.randn(8, 3, IMAGE_SIZE, IMAGE_SIZE)
    labels = torch.randint(0, 10, (8,))
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    print("loss", loss.item())
