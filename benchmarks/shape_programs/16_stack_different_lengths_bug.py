"""Multi-kernel temporal convolutions over ECG signals, stacked and averaged."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_LEADS = 3
SIGNAL_LEN = 64
N_RHYTHMS = 4


class MultiKernelBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_sizes=(3, 5, 7)):
        super().__init__()
        self.branches = nn.ModuleList(
            [nn.Conv1d(in_channels, out_channels, k) for k in kernel_sizes]
        )

    def forward(self, x):
        outputs = [F.relu(branch(x)) for branch in self.branches]
        return torch.stack(outputs, dim=0).mean(dim=0)


class RhythmClassifier(nn.Module):
    def __init__(self, n_leads, channels, n_classes):
        super().__init__()
        self.block1 = MultiKernelBlock(n_leads, channels)
        self.block2 = MultiKernelBlock(channels, channels)
        self.head = nn.Linear(channels, n_classes)

    def forward(self, signal):
        h = self.block2(self.block1(signal))
        return self.head(h.amax(dim=-1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = RhythmClassifier(N_LEADS, channels=16, n_classes=N_RHYTHMS)
    signal = torch.randn(5, N_LEADS, SIGNAL_LEN)
    rhythm = torch.randint(0, N_RHYTHMS, (5,))
    loss = F.cross_entropy(model(signal), rhythm)
    loss.backward()
    print("loss", loss.item())
