"""A TextCNN sentiment classifier: embeddings, 1-d convolutions, max-over-time pooling."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextCNN(nn.Module):
    def __init__(self, vocab_size, embed_dim, n_filters, kernel_sizes, n_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, n_filters, k) for k in kernel_sizes])
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(n_filters * len(kernel_sizes), n_classes)

    def conv_and_pool(self, x, conv):
        h = F.relu(conv(x))
        return F.max_pool1d(h, h.size(2)).squeeze(2)

    def forward(self, tokens):
        emb = self.embedding(tokens)
        pooled = [self.conv_and_pool(emb, conv) for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


def evaluate(model, tokens, labels):
    model.eval()
    with torch.no_grad():
        preds = model(tokens).argmax(dim=1)
    return (preds == labels).float().mean().item()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TextCNN(vocab_size=500, embed_dim=32, n_filters=16, kernel_sizes=(3, 4, 5), n_classes=2)
    tokens = torch.randint(0, 500, (4, 20))
    labels = torch.randint(0, 2, (4,))
    loss = F.cross_entropy(model(tokens), labels)
    loss.backward()
    print("loss", loss.item(), "acc", evaluate(model, tokens, labels))
