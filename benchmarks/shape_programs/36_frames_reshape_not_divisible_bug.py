import torch
import torch.nn as nn

SAMPLE_RATE = 22050
FRAME_MS = 25
CLIP_SECONDS = 0.5


def frame_signal(wave, frame_len):
    """Split (B, T) waveforms into non-overlapping (B, n_frames, frame_len) frames."""
    B, T = wave.shape
    n_frames = T // frame_len
    return wave.reshape(B, n_frames, frame_len)


class FrameClassifier(nn.Module):
    def __init__(self, frame_len, hidden=64, n_classes=5):
        super().__init__()
        self.frame_len = frame_len
        self.encoder = nn.Sequential(nn.Linear(frame_len, hidden), nn.Tanh())
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, wave):
        frames = frame_signal(wave, self.frame_len)
        h, _ = self.rnn(self.encoder(frames))
        return self.out(h[:, -1])


if __name__ == "__main__":
    torch.manual_seed(0)
    frame_len = SAMPLE_RATE * FRAME_MS // 1000
    n_samples = int(SAMPLE_RATE * CLIP_SECONDS)
    waves = torch.randn(4, n_samples)
    model = FrameClassifier(frame_len)
    logits = model(waves)
    print("frame_len", frame_len, "logits", tuple(logits.shape))
