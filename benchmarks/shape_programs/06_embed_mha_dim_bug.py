"""Encode product titles with an embedding and multi-head attention pooling."""
import torch
import torch.nn as nn

VOCAB = 1000
EMBED_DIM = 128
ATTN_DIM = 256
N_HEADS = 4
N_CATEGORIES = 10


class TitleEncoder(nn.Module):
    def __init__(self, vocab, embed_dim, attn_dim, n_heads, n_categories):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim, padding_idx=0)
        self.attn = nn.MultiheadAttention(embed_dim=attn_dim, num_heads=n_heads, batch_first=True)
        self.query = nn.Parameter(torch.randn(1, 1, attn_dim))
        self.classifier = nn.Linear(attn_dim, n_categories)

    def forward(self, tokens):
        x = self.embed(tokens)
        padding = tokens == 0
        query = self.query.expand(x.size(0), -1, -1)
        pooled, _ = self.attn(query, x, x, key_padding_mask=padding)
        return self.classifier(pooled.squeeze(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TitleEncoder(VOCAB, EMBED_DIM, ATTN_DIM, N_HEADS, N_CATEGORIES)
    tokens = torch.randint(1, VOCAB, (3, 12))
    tokens[:, 9:] = 0
    labels = torch.randint(0, N_CATEGORIES, (3,))
    logits = model(tokens)
    loss = nn.CrossEntropyLoss()(logits, labels)
    loss.backward()
    print(logits.shape, loss.item())
