import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="CRNN sound-event classifier on log-mel spectrograms")
    p.add_argument("--n-mels", type=int, default=64)
    p.add_argument("--frames", type=int, default=100)
    p.add_argument("--channels", type=int, default=32)
    p.add_argument("--hidden", type=int, default=96)
    p.add_argument("--n-classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=8)
    return p.parse_args(argv)


def conv_block(in_ch, out_ch):
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, 3, padding=1), nn.BatchNorm2d(out_ch), nn.ReLU(),
        nn.MaxPool2d(2),
    )


class CRNN(nn.Module):
    """Two conv blocks (each halves mel bins and frames), then a BiGRU over the time axis."""

    def __init__(self, n_mels, channels, hidden, n_classes):
        super().__init__()
        self.convs = nn.Sequential(conv_block(1, channels), conv_block(channels, channels))
        rnn_in = channels * (n_mels // 4)
        self.gru = nn.GRU(rnn_in, hidden, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * hidden, n_classes)

    def forward(self, spec):
        x = self.convs(spec.unsqueeze(1))          # (B, C, n_mels / 4, frames / 4)
        x = x.flatten(1, 2)                        # merge channels and mel bins per frame
        out, _ = self.gru(x)
        return self.classifier(out.mean(dim=1))    # clip-level logits


def fake_log_mel(batch_size, n_mels, frames):
    spec = torch.randn(batch_size, n_mels, frames).cumsum(dim=2) / frames ** 0.5
    return torch.log1p(spec.abs())


if __name__ == "__main__":
    torch.manual_seed(0)
    args = parse_args([])
    model = CRNN(args.n_mels, args.channels, args.hidden, args.n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    specs = fake_log_mel(args.batch_size, args.n_mels, args.frames)
    labels = torch.randint(0, args.n_classes, (args.batch_size,))
    for step in range(2):
        loss = F.cross_entropy(model(specs), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
