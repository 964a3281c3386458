import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 1000
EMBED_DIM = 32
HIDDEN_DIM = 48
NUM_TAGS = 9
PAD_IDX = 0


class BiGRUTagger(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_tags, pad_idx=PAD_IDX):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_idx)
        self.gru = nn.GRU(
            embed_dim,
            hidden_dim,
            num_layers=2,
            batch_first=True,
            bidirectional=True,
            dropout=0.1,
        )
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(2 * hidden_dim, num_tags)

    def forward(self, tokens):
        emb = self.embedding(tokens)
        outputs, _ = self.gru(emb)
        return self.classifier(self.dropout(outputs))


def random_batch(batch_size, seq_len):
    tokens = torch.randint(1, VOCAB_SIZE, (batch_size, seq_len))
    tags = torch.randint(0, NUM_TAGS, (batch_size, seq_len))
    return tokens, tags


if __name__ == "__main__":
    torch.manual_seed(0)
    model = BiGRUTagger(VOCAB_SIZE, EMBED_DIM, HIDDEN_DIM, NUM_TAGS)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        tokens, tags = random_batch(batch_size=8, seq_len=20)
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, NUM_TAGS), tags.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss={loss.item():.3f}")
