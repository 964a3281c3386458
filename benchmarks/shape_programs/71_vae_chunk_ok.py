"""Fully connected VAE on flattened 28x28 images with the reparameterisation trick."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INPUT_DIM = 28 * 28
HIDDEN = 256
LATENT = 16
BATCH = 32


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(INPUT_DIM, HIDDEN), nn.ReLU(),
                                 nn.Linear(HIDDEN, 2 * LATENT))
        self.dec = nn.Sequential(nn.Linear(LATENT, HIDDEN), nn.ReLU(),
                                 nn.Linear(HIDDEN, INPUT_DIM))

    def encode(self, x):
        h = self.enc(x)  # (B, 2 * LATENT)
        mu, logvar = h.chunk(2, dim=-1)
        return mu, logvar

    def forward(self, x):
        mu, logvar = self.encode(x)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.dec(z), mu, logvar


def vae_loss(recon_logits, x, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (rec + kld) / x.size(0)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = VAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = (torch.rand(BATCH * 2, 1, 28, 28) > 0.7).float()
    for step in range(2):
        x = data[step * BATCH:(step + 1) * BATCH].view(BATCH, -1)
        recon, mu, logvar = model(x)
        loss = vae_loss(recon, x, mu, logvar)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, "elbo loss", loss.item())
    with torch.no_grad():
        samples = torch.sigmoid(model.dec(torch.randn(4, LATENT))).view(4, 1, 28, 28)
    print("samples", tuple(samples.shape))
