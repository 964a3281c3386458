import torch
import torch.nn as nn
import torch.nn.functional as F

TEMPERATURE = 0.5
PROJ_DIM = 32


def augment(images):
    """Cheap SimCLR-style views: random horizontal flip, random shift, brightness jitter."""
    flip = torch.rand(images.size(0), 1, 1, 1) < 0.5
    out = torch.where(flip, images.flip(3), images)
    dx, dy = torch.randint(-3, 4, (2,)).tolist()
    out = torch.roll(out, shifts=(dy, dx), dims=(2, 3))
    return out * (1 + 0.2 * (torch.rand(images.size(0), 1, 1, 1) - 0.5))


class Encoder(nn.Module):
    def __init__(self, width=32, feat_dim=128, proj_dim=PROJ_DIM):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(2 * width, feat_dim, 3, padding=1), nn.BatchNorm2d(feat_dim), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.projector = nn.Sequential(nn.Linear(feat_dim, feat_dim), nn.ReLU(), nn.Linear(feat_dim, proj_dim))

    def forward(self, x):
        return self.projector(self.backbone(x))


def nt_xent_loss(z1, z2, temperature=TEMPERATURE):
    """Row i's positive is its other view: i + B for the first half, i - B for the second."""
    B = z1.size(0)
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)             # (2B, D)
    sim = z @ z.t() / temperature                                   # (2B, 2B)
    self_mask = torch.eye(2 * B, dtype=torch.bool)
    sim = sim.masked_fill(self_mask, float("-inf"))
    targets = torch.arange(B, 2 * B)
    return F.cross_entropy(sim, targets)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Encoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.rand(16, 3, 32, 32)
    for step in range(2):
        z1, z2 = model(augment(images)), model(augment(images))
        loss = nt_xent_loss(z1, z2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
