"""Sequence labelling where each sentence carries a confidence weight from the annotators."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 150
N_LABELS = 6
BATCH = 4
SEQ = 11


class Tagger(nn.Module):
    def __init__(self, vocab, n_labels, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, n_labels)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.out(h)


def weighted_token_loss(logits, labels, sentence_weights):
    B, T, V = logits.shape
    per_token = F.cross_entropy(logits.reshape(B * T, V), labels.reshape(B * T), reduction="none")
    per_token = per_token.view(B, T)
    weighted = per_token * sentence_weights
    return weighted.sum() / (sentence_weights.sum() * T)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Tagger(VOCAB, N_LABELS)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    labels = torch.randint(0, N_LABELS, (BATCH, SEQ))
    confidence = torch.rand(BATCH)
    optimizer.zero_grad()
    loss = weighted_token_loss(model(tokens), labels, confidence)
    loss.backward()
    optimizer.step()
    print("loss", loss.item())
