import torch
import torch.nn as nn
import torch.nn.functional as F

IMG_SIZE = 28
N_CLASSES = 10
NZ = 64


class Generator(nn.Module):
    def __init__(self, nz=NZ, n_classes=N_CLASSES, img_size=IMG_SIZE):
        super().__init__()
        self.init_size = img_size // 4
        self.label_emb = nn.Embedding(n_classes, n_classes)
        self.fc = nn.Linear(nz + n_classes, 128 * self.init_size ** 2)
        self.net = nn.Sequential(
            nn.BatchNorm2d(128), nn.ReLU(),
            nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 1, 4, stride=2, padding=1), nn.Tanh(),
        )

    def forward(self, z, labels):
        h = self.fc(torch.cat([z, self.label_emb(labels)], dim=1))
        return self.net(h.view(-1, 128, self.init_size, self.init_size))


class Discriminator(nn.Module):
    """Conditions on the label by appending a learned per-class image plane as a second channel."""

    def __init__(self, n_classes=N_CLASSES, img_size=32):
        super().__init__()
        self.label_plane = nn.Embedding(n_classes, img_size * img_size)
        self.net = nn.Sequential(
            nn.Conv2d(2, 64, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(64, 128, 4, stride=2, padding=1), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(128, 1),
        )

    def forward(self, images, labels):
        B, _, H, W = images.shape
        plane = self.label_plane(labels).view(B, 1, H, W)
        return self.net(torch.cat([images, plane], dim=1))


def train_step(G, D, opt_g, opt_d, real, labels):
    B = real.size(0)
    ones, zeros = torch.ones(B, 1), torch.zeros(B, 1)
    z = torch.randn(B, NZ)
    fake = G(z, labels)

    d_loss = F.binary_cross_entropy_with_logits(D(real, labels), ones) + \
        F.binary_cross_entropy_with_logits(D(fake.detach(), labels), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()

    g_loss = F.binary_cross_entropy_with_logits(D(fake, labels), ones)
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    return d_loss.item(), g_loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    G = Generator()
    D = Discriminator(img_size=IMG_SIZE)
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real = torch.rand(16, 1, IMG_SIZE, IMG_SIZE) * 2 - 1
    labels = torch.randint(0, N_CLASSES, (16,))
    for step in range(2):
        d_loss, g_loss = train_step(G, D, opt_g, opt_d, real, labels)
        print(f"step {step}: d {d_loss:.4f} g {g_loss:.4f}")
