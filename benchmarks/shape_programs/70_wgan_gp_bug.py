"""WGAN-GP on 16x16 grayscale images: critic update with gradient penalty, then generator."""
import torch
import torch.nn as nn

Z_DIM = 32
IMG = 16
BATCH = 8
LAMBDA_GP = 10.0


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(Z_DIM, 64 * 4 * 4)
        self.net = nn.Sequential(
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.ConvTranspose2d(32, 1, 4, stride=2, padding=1), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 64, 4, 4))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(32, 64, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(64 * 4 * 4, 1),
        )

    def forward(self, x):
        return self.net(x)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(mixed)
    grads = torch.autograd.grad(scores.sum(), mixed, create_graph=True)[0]
    return ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    G, D = Generator(), Critic()
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-4, betas=(0.0, 0.9))
    real = torch.rand(BATCH, 1, IMG, IMG) * 2 - 1
    fake = G(torch.randn(BATCH, Z_DIM)).detach()
    d_loss = D(fake).mean() - D(real).mean() + LAMBDA_GP * gradient_penalty(D, real, fake)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = -D(G(torch.randn(BATCH, Z_DIM))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    print("critic", d_loss.item(), "generator", g_loss.item())
