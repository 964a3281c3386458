"""A conditional sequence decoder: a latent code initialises a 2-layer GRU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

LATENT = 16
HIDDEN = 32
NUM_LAYERS = 2
VOCAB = 60


class ConditionalDecoder(nn.Module):
    def __init__(self, latent, hidden, num_layers, vocab):
        super().__init__()
        self.num_layers = num_layers
        self.init_proj = nn.Linear(latent, hidden)
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=num_layers, batch_first=True)
        self.to_vocab = nn.Linear(hidden, vocab)

    def initial_state(self, z):
        return torch.tanh(self.init_proj(z)).unsqueeze(0).repeat(self.num_layers, 1, 1)

    def forward(self, z, prev_tokens):
        h0 = self.initial_state(z)
        out, _ = self.gru(self.embed(prev_tokens), h0)
        return self.to_vocab(out)


if __name__ == "__main__":
    torch.manual_seed(0)
    decoder = ConditionalDecoder(LATENT, HIDDEN, NUM_LAYERS, VOCAB)
    z = torch.randn(3, LATENT)
    sequence = torch.randint(0, VOCAB, (3, 10))
    logits = decoder(z, sequence[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), sequence[:, 1:].reshape(-1))
    loss.backward()
    print("loss", loss.item())
