"""A character-level GRU language model trained on random text."""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 40
EMBED = 24
HIDDEN = 48
SEQ_LEN = 16


class CharLM(nn.Module):
    def __init__(self, vocab_size, embed, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab_size)

    def forward(self, chars):
        out, _ = self.rnn(self.embed(chars))
        return self.decoder(out)


def lm_loss(model, batch):
    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = model(inputs)
    return F.cross_entropy(logits, targets)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = CharLM(VOCAB_SIZE, EMBED, HIDDEN)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    batches = [torch.randint(0, VOCAB_SIZE, (4, SEQ_LEN + 1)) for _ in range(2)]
    for batch in batches:
        optimizer.zero_grad()
        loss = lm_loss(model, batch)
        loss.backward()
        optimizer.step()
    print("loss", loss.item())
