"""Bidirectional GRU sentiment classifier over padded token ids."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

VOCAB_SIZE = 500
EMBED_DIM = 32
HIDDEN = 64
N_CLASSES = 2
PAD_ID = 0
MAX_LEN = 24


class SentimentGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB_SIZE, EMBED_DIM, padding_idx=PAD_ID)
        self.gru = nn.GRU(EMBED_DIM, HIDDEN, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(2 * HIDDEN, N_CLASSES)

    def forward(self, tokens):
        out, h_n = self.gru(self.embed(tokens))
        # h_n is (num_directions, B, HIDDEN): join the last forward and backward states
        last = torch.cat([h_n[0], h_n[1]], dim=-1)
        return self.fc(self.dropout(last))


def make_dataset(n):
    lengths = torch.randint(5, MAX_LEN + 1, (n,))
    tokens = torch.randint(1, VOCAB_SIZE, (n, MAX_LEN))
    positions = torch.arange(MAX_LEN).unsqueeze(0)
    tokens[positions >= lengths.unsqueeze(1)] = PAD_ID
    labels = torch.randint(0, N_CLASSES, (n,))
    return TensorDataset(tokens, labels)


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(make_dataset(40), batch_size=16, shuffle=True)
    model = SentimentGRU()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1):
        for tokens, labels in loader:
            logits = model(tokens)
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    print("final loss", loss.item())
