"""Tiny Vision Transformer with a learnable class token for 32x32 images."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG = 32
PATCH = 8
DIM = 64
HEADS = 4
DEPTH = 2
N_CLASSES = 10


class PatchEmbed(nn.Module):
    def __init__(self, img, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.num_patches = (img // patch) ** 2

    def forward(self, x):
        x = self.proj(x)  # (B, D, H/p, W/p)
        return x.flatten(2).transpose(1, 2)  # (B, N, D)


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = PatchEmbed(IMG, PATCH, DIM)
        n = self.patch.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, HEADS, dim_feedforward=2 * DIM,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, DEPTH, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, N_CLASSES)

    def forward(self, x):
        tokens = self.patch(x)
        cls = self.cls_token.expand(tokens.size(0), -1, -1)
        tokens = torch.cat([cls, tokens], dim=1)
        tokens = tokens + self.pos_embed
        h = self.encoder(tokens)
        return self.head(self.norm(h[:, 0]))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    for step in range(2):
        images = torch.randn(6, 3, IMG, IMG)
        labels = torch.randint(0, N_CLASSES, (6,))
        loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, "loss", round(loss.item(), 4))
