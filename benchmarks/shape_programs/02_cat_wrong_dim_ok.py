"""Fuse an image embedding with tabular features and regress a price."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

IMG_FEATURES = 512
TAB_FEATURES = 12


class ImageTower(nn.Module):
    def __init__(self, in_dim, out_dim=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 256), nn.ReLU(), nn.Linear(256, out_dim))

    def forward(self, x):
        return self.net(x)


class TabularTower(nn.Module):
    def __init__(self, in_dim, out_dim=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class FusionRegressor(nn.Module):
    def __init__(self, img_dim, tab_dim):
        super().__init__()
        self.image = ImageTower(img_dim, 128)
        self.tabular = TabularTower(tab_dim, 64)
        self.head = nn.Linear(128 + 64, 1)

    def forward(self, img_feats, tab_feats):
        a = self.image(img_feats)
        b = self.tabular(tab_feats)
        fused = torch.cat([a, b], dim=1)
        return self.head(fused)


if __name__ == "__main__":
    torch.manual_seed(0)
    n = 32
    data = TensorDataset(torch.randn(n, IMG_FEATURES), torch.randn(n, TAB_FEATURES), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = FusionRegressor(IMG_FEATURES, TAB_FEATURES)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    for img, tab, price in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(img, tab), price)
        loss.backward()
        optimizer.step()
        break
    print("loss", loss.item())
