"""Text classifier with hand-written multi-head attention and dynamic padding per batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

VOCAB = 300
PAD = 0
MAX_LEN = 32
D_MODEL = 64
N_HEADS = 4
N_CLASSES = 4


class ToyTextDataset(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.lengths = torch.randint(4, 17, (n,), generator=g).tolist()
        self.labels = torch.randint(0, N_CLASSES, (n,), generator=g)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        ids = torch.randint(1, VOCAB, (self.lengths[i],))
        mask = torch.zeros(MAX_LEN, dtype=torch.bool)
        mask[: len(ids)] = True
        return ids, mask, self.labels[i]


def collate(batch):
    ids, masks, labels = zip(*batch)
    ids = pad_sequence(ids, batch_first=True, padding_value=PAD)  # (B, longest)
    return ids, torch.stack(masks), torch.stack(labels)


class MHAClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.pos = nn.Embedding(MAX_LEN, D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        self.cls = nn.Linear(D_MODEL, N_CLASSES)

    def forward(self, ids, mask):
        B, T = ids.shape
        x = self.embed(ids) + self.pos(torch.arange(T))
        q, k, v = self.qkv(x).view(B, T, 3, N_HEADS, D_MODEL // N_HEADS).unbind(dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (D_MODEL // N_HEADS) ** 0.5
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        attn = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(dim=-1), v).reshape(B, T, D_MODEL)
        h = self.out(attn) * mask[:, :, None]
        return self.cls(h.sum(dim=1) / mask.sum(dim=1, keepdim=True))


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(ToyTextDataset(24), batch_size=8, collate_fn=collate)
    model = MHAClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for ids, mask, labels in loader:
        loss = F.cross_entropy(model(ids, mask), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", loss.item())
