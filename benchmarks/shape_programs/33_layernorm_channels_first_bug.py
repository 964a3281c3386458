import torch
import torch.nn as nn
import torch.nn.functional as F

N_MELS = 40
N_KEYWORDS = 12


class TCNBlock(nn.Module):
    """Dilated temporal conv block operating on (B, C, T) features."""

    def __init__(self, channels, kernel_size=3, dilation=1):
        super().__init__()
        pad = (kernel_size - 1) // 2 * dilation
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=pad, dilation=dilation)
        self.norm = nn.LayerNorm(channels)

    def forward(self, x):
        y = self.conv(x)
        y = self.norm(y)
        return x + F.gelu(y)


class KeywordSpotter(nn.Module):
    def __init__(self, n_mels=N_MELS, channels=64, n_blocks=3, n_classes=N_KEYWORDS):
        super().__init__()
        self.inp = nn.Conv1d(n_mels, channels, kernel_size=1)
        self.blocks = nn.Sequential(*[TCNBlock(channels, dilation=2 ** i) for i in range(n_blocks)])
        self.fc = nn.Linear(channels, n_classes)

    def forward(self, mels):
        x = self.blocks(self.inp(mels))   # (B, C, T)
        return self.fc(x.mean(dim=2))


if __name__ == "__main__":
    torch.manual_seed(0)
    batch, frames = 4, 101   # 1 s of audio at 10 ms hop
    mels = torch.randn(batch, N_MELS, frames)
    labels = torch.randint(0, N_KEYWORDS, (batch,))
    model = KeywordSpotter()
    logits = model(mels)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    print("loss:", round(loss.item(), 4))
