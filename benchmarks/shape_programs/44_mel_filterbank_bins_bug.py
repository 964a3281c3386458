import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 16000
N_FFT = 400          # 25 ms
HOP = 160            # 10 ms
N_MELS = 40
N_CLASSES = 12       # keywords


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_to_hz(m):
    return 700.0 * (10 ** (m / 2595.0) - 1.0)


def mel_filterbank(n_mels, n_fft, sample_rate):
    """Triangular filters, one row per mel band, one column per STFT frequency bin."""
    n_freqs = n_fft // 2
    freqs = torch.linspace(0, sample_rate / 2, n_freqs)
    mel_points = torch.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)
    hz_points = torch.tensor([mel_to_hz(m.item()) for m in mel_points])
    fb = torch.zeros(n_mels, n_freqs)
    for m in range(n_mels):
        lo, center, hi = hz_points[m], hz_points[m + 1], hz_points[m + 2]
        rising = (freqs - lo) / (center - lo)
        falling = (hi - freqs) / (hi - center)
        fb[m] = torch.clamp(torch.minimum(rising, falling), min=0.0)
    return fb


class LogMelSpectrogram(nn.Module):
    def __init__(self, n_fft=N_FFT, hop=HOP, n_mels=N_MELS, sample_rate=SAMPLE_RATE):
        super().__init__()
        self.n_fft = n_fft
        self.hop = hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("fb", mel_filterbank(n_mels, n_fft, sample_rate))

    def forward(self, wave):
        spec = torch.stft(wave, self.n_fft, hop_length=self.hop, window=self.window,
                          return_complex=True)                   # (B, freq bins, frames)
        power = spec.abs() ** 2
        mel = torch.matmul(self.fb, power)                       # (B, n_mels, frames)
        return torch.log(mel + 1e-6)


class KeywordSpotter(nn.Module):
    def __init__(self, n_mels=N_MELS, channels=64, n_classes=N_CLASSES):
        super().__init__()
        self.frontend = LogMelSpectrogram(n_mels=n_mels)
        self.norm = nn.BatchNorm1d(n_mels)
        self.convs = nn.Sequential(
            nn.Conv1d(n_mels, channels, 5, padding=2), nn.BatchNorm1d(channels), nn.ReLU(),
            nn.Conv1d(channels, channels, 5, padding=2), nn.BatchNorm1d(channels), nn.ReLU(),
        )
        self.classifier = nn.Linear(channels, n_classes)

    def forward(self, wave):
        feats = self.norm(self.frontend(wave))
        h = self.convs(feats)
        return self.classifier(h.mean(dim=2))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = KeywordSpotter()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    waves = 0.1 * torch.randn(8, SAMPLE_RATE)        # eight 1-second clips
    labels = torch.randint(0, N_CLASSES, (8,))
    for step in range(2):
        loss = F.cross_entropy(model(waves), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
