import torch
import torch.nn as nn
import torch.nn.functional as F

LATENT_DIM = 16
IMG_SIZE = 28


class ConvVAE(nn.Module):
    def __init__(self, latent_dim=LATENT_DIM):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 32, 4, stride=2, padding=1), nn.ReLU(),     # 14x14
            nn.Conv2d(32, 64, 4, stride=2, padding=1), nn.ReLU(),    # 7x7
            nn.Flatten(),
        )
        self.to_stats = nn.Linear(64 * 7 * 7, 2 * latent_dim)        # mean and log-variance
        self.from_latent = nn.Linear(latent_dim, 64 * 7 * 7)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(32, 1, 4, stride=2, padding=1),
        )

    def encode(self, x):
        stats = self.to_stats(self.encoder(x))
        mu, logvar = stats.chunk(2, dim=0)
        return mu, logvar

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        return mu + torch.randn_like(std) * std

    def decode(self, z):
        h = self.from_latent(z).view(-1, 64, 7, 7)
        return self.decoder(F.relu(h))

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def vae_loss(recon_logits, x, mu, logvar, beta=1.0):
    recon = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    return recon + beta * kl


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ConvVAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = (torch.rand(16, 1, IMG_SIZE, IMG_SIZE) > 0.7).float()    # binarized digits stand-in
    for step in range(3):
        recon, mu, logvar = model(images)
        loss = vae_loss(recon, images, mu, logvar)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.2f}")
    with torch.no_grad():
        samples = torch.sigmoid(model.decode(torch.randn(4, LATENT_DIM)))
    print("samples", tuple(samples.shape))
