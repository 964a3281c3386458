"""Binary spam detection with a bag-of-embeddings model."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 2000
EMBED = 32


class SpamDetector(nn.Module):
    def __init__(self, vocab, embed):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, embed, mode="mean")
        self.hidden = nn.Linear(embed, embed)
        self.logit = nn.Linear(embed, 1)

    def forward(self, tokens):
        h = F.relu(self.hidden(self.bag(tokens)))
        return self.logit(h)


def train(model, loader, epochs=1):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        for tokens, is_spam in loader:
            optimizer.zero_grad()
            logits = model(tokens)
            loss = F.binary_cross_entropy_with_logits(logits.squeeze(1), is_spam)
            loss.backward()
            optimizer.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    messages = torch.randint(0, VOCAB, (24, 15))
    is_spam = torch.randint(0, 2, (24,)).float()
    loader = DataLoader(TensorDataset(messages, is_spam), batch_size=12, shuffle=True)
    model = SpamDetector(VOCAB, EMBED)
    print("final loss", train(model, loader))
