import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "image_size": 32,
    "patch_size": 4,
    "in_chans": 3,
    "embed_dim": 48,
    "depth": 2,
    "num_heads": 4,
    "mlp_ratio": 2,
    "num_classes": 10,
}


class PatchEmbedding(nn.Module):
    """Split the image into non-overlapping patches and project each one to embed_dim."""

    def __init__(self, image_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.grid = image_size // patch_size
        self.num_patches = self.grid * self.grid
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, images):
        x = self.proj(images)          # (B, D, grid, grid)
        return x.flatten(2)            # tokens


class MeanPoolViT(nn.Module):
    """A ViT without a class token: the head reads the mean of the patch tokens."""

    def __init__(self, cfg):
        super().__init__()
        dim = cfg["embed_dim"]
        self.patch_embed = PatchEmbedding(cfg["image_size"], cfg["patch_size"], cfg["in_chans"], dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=dim,
            nhead=cfg["num_heads"],
            dim_feedforward=dim * cfg["mlp_ratio"],
            dropout=0.0,
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, cfg["depth"])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, cfg["num_classes"])

    def forward(self, images):
        tokens = self.patch_embed(images)
        tokens = tokens + self.pos_embed
        tokens = self.norm(self.blocks(tokens))
        return self.head(tokens.mean(dim=1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = MeanPoolViT(CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    size = CONFIG["image_size"]
    images = torch.randn(6, CONFIG["in_chans"], size, size)
    labels = torch.randint(0, CONFIG["num_classes"], (6,))
    for step in range(2):
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
