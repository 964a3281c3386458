import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

IMG = 28
LATENT_CH = 32


def up_block(in_ch, out_ch, act):
    return nn.Sequential(nn.ConvTranspose2d(in_ch, out_ch, 3, stride=2, padding=1, output_padding=1), act)


class ConvAutoencoder(nn.Module):
    def __init__(self, in_ch=1, hidden=16, latent_ch=LATENT_CH):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(in_ch, hidden, 3, stride=2, padding=1), nn.ReLU(),      # 28 -> 14
            nn.Conv2d(hidden, latent_ch, 3, stride=2, padding=1), nn.ReLU(),  # 14 -> 7
        )
        self.decoder = nn.Sequential(
            up_block(latent_ch, hidden, nn.ReLU()),    # 7 -> 14
            up_block(hidden, in_ch, nn.Sigmoid()),     # 14 -> 28
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


def train_epoch(model, loader, opt):
    model.train()
    total = 0.0
    for (x,) in loader:
        recon = model(x)
        loss = F.mse_loss(recon, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * x.size(0)
    return total / len(loader.dataset)


if __name__ == "__main__":
    torch.manual_seed(0)
    digits = torch.rand(16, 1, IMG, IMG)
    loader = DataLoader(TensorDataset(digits), batch_size=8, shuffle=True)
    model = ConvAutoencoder()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        print(f"epoch {epoch}: recon mse {train_epoch(model, loader, opt):.4f}")
