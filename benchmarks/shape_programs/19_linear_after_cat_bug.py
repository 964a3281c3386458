"""Review rating prediction from a bidirectional GRU's final states."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 800
EMBED = 50
HIDDEN = 64
N_STARS = 5


class ReviewRater(nn.Module):
    def __init__(self, vocab, embed, hidden, n_stars):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed, padding_idx=0)
        self.gru = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_stars)

    def forward(self, tokens):
        _, h_n = self.gru(self.embed(tokens))
        forward_state, backward_state = h_n[0], h_n[1]
        summary = torch.cat([forward_state, backward_state], dim=-1)
        summary = torch.tanh(self.proj(summary))
        return self.out(summary)


def collate(reviews):
    longest = max(len(r) for r in reviews)
    padded = torch.zeros(len(reviews), longest, dtype=torch.long)
    for i, review in enumerate(reviews):
        padded[i, : len(review)] = torch.tensor(review)
    return padded


if __name__ == "__main__":
    torch.manual_seed(0)
    reviews = [[5, 17, 230, 9], [44, 2, 7], [600, 12, 13, 14, 15, 16]]
    stars = torch.tensor([4, 0, 2])
    model = ReviewRater(VOCAB, EMBED, HIDDEN, N_STARS)
    logits = model(collate(reviews))
    loss = F.cross_entropy(logits, stars)
    loss.backward()
    print(logits.shape, loss.item())
