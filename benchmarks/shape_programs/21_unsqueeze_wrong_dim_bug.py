"""Sentence embeddings by masked mean pooling over transformer outputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

D_MODEL = 32
MAX_LEN = 14


def masked_mean(hidden, mask):
    # hidden: (B, T, D), mask: (B, T) with 1 for real tokens
    mask = mask.unsqueeze(1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1)
    counts = mask.sum(dim=1).clamp(min=1.0)
    return summed / counts


class SentenceEncoder(nn.Module):
    def __init__(self, vocab, d_model):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)

    def forward(self, tokens):
        mask = tokens != 0
        hidden = self.encoder(self.embed(tokens), src_key_padding_mask=~mask)
        return F.normalize(masked_mean(hidden, mask), dim=-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    encoder = SentenceEncoder(vocab=250, d_model=D_MODEL)
    anchors = torch.randint(1, 250, (4, MAX_LEN))
    positives = torch.randint(1, 250, (4, MAX_LEN))
    anchors[:, 10:] = 0
    sim = encoder(anchors) @ encoder(positives).T / 0.05
    loss = F.cross_entropy(sim, torch.arange(4))
    loss.backward()
    print("contrastive loss", loss.item())
