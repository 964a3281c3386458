"""Classify satellite tiles that the reader delivers as (height, width, bands) arrays."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BANDS = 4
TILE = 24
N_LAND_USE = 6


def load_tiles(n, generator):
    # the tile reader yields uint8 tiles laid out as (n, height, width, bands)
    return torch.randint(0, 256, (n, TILE, TILE, BANDS), dtype=torch.uint8, generator=generator)


class TileNet(nn.Module):
    def __init__(self, bands, n_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(bands, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


def to_float(tiles):
    x = tiles.permute(0, 3, 1, 2).float() / 255.0
    return x


if __name__ == "__main__":
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = TileNet(BANDS, N_LAND_USE)
    batch = to_float(load_tiles(3, gen))
    labels = torch.randint(0, N_LAND_USE, (3,))
    loss = F.cross_entropy(model(batch), labels)
    loss.backward()
    print("loss", loss.item())
