"""Keyword spotting: log-mel features from short waveforms, 1-D conv stack over time."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 8000
CLIP_SECONDS = 0.2
N_FFT = 256
HOP = 80
N_MELS = 40
N_KEYWORDS = 6
POOL = 2


def log_mel(wave, filterbank):
    window = torch.hann_window(N_FFT)
    spec = torch.stft(wave, N_FFT, hop_length=HOP, window=window, return_complex=True)
    power = spec.abs() ** 2  # (B, N_FFT // 2 + 1, frames)
    mel = filterbank @ power  # (B, N_MELS, frames)
    return torch.log(mel + 1e-6)


class KWSNet(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        channels = [N_MELS, 64, 64, 96]
        for c_in, c_out in zip(channels[:-1], channels[1:]):
            layers += [nn.Conv1d(c_in, c_out, 3, padding=1), nn.BatchNorm1d(c_out),
                       nn.ReLU(), nn.MaxPool1d(POOL)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(channels[-1], N_KEYWORDS)

    def forward(self, mel):
        h = self.features(mel)
        return self.classifier(h.mean(dim=-1))


if __name__ == "__main__":
    torch.manual_seed(0)
    n_samples = int(SAMPLE_RATE * CLIP_SECONDS)
    filterbank = torch.rand(N_MELS, N_FFT // 2 + 1)
    model = KWSNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(2):
        wave = torch.randn(8, n_samples)
        target = torch.randint(0, N_KEYWORDS, (8,))
        feats = log_mel(wave, filterbank)
        loss = F.cross_entropy(model(feats), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, "loss", loss.item())
