"""MoCo-style contrastive step: query encoder, momentum key encoder and a queue of negatives."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

FEAT_DIM = 32
QUEUE_SIZE = 64
TEMPERATURE = 0.07
MOMENTUM = 0.99
BATCH = 8


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.proj = nn.Linear(32, dim)

    def forward(self, x):
        return F.normalize(self.proj(self.conv(x)), dim=1)


def augment(x):
    flipped = torch.where(torch.rand(x.size(0), 1, 1, 1) < 0.5, x.flip(-1), x)
    return flipped + 0.1 * torch.randn_like(x)


def contrastive_loss(q, k, queue):
    l_pos = (q * k).sum(dim=1, keepdim=True)
    l_neg = q @ queue.t()  # (B, QUEUE_SIZE)
    logits = torch.cat([l_pos, l_neg], dim=1) / TEMPERATURE
    labels = torch.zeros(q.size(0), dtype=torch.long)
    return F.cross_entropy(logits, labels)


if __name__ == "__main__":
    torch.manual_seed(0)
    encoder_q = Encoder(FEAT_DIM)
    encoder_k = copy.deepcopy(encoder_q)
    for p in encoder_k.parameters():
        p.requires_grad_(False)
    queue = F.normalize(torch.randn(QUEUE_SIZE, FEAT_DIM), dim=1)
    opt = torch.optim.SGD(encoder_q.parameters(), lr=0.03, momentum=0.9)
    for step in range(2):
        images = torch.randn(BATCH, 3, 32, 32)
        q = encoder_q(augment(images))
        with torch.no_grad():
            for pq, pk in zip(encoder_q.parameters(), encoder_k.parameters()):
                pk.mul_(MOMENTUM).add_(pq.detach(), alpha=1 - MOMENTUM)
            k = encoder_k(augment(images))
        loss = contrastive_loss(q, k, queue)
        opt.zero_grad()
        loss.backward()
        opt.step()
        queue = torch.cat([k, queue])[:QUEUE_SIZE]
        print("step", step, "infonce", loss.item())
