import torch
import torch.nn as nn

PAD_ID = 0
MAX_LEN = 32


def make_pad_mask(lengths, max_len):
    # True where the position is padding
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) >= lengths.unsqueeze(1)


class SentenceEncoder(nn.Module):
    def __init__(self, vocab_size, d_model=64, nhead=4, num_layers=2, max_len=MAX_LEN):
        super().__init__()
        self.max_len = max_len
        self.tok = nn.Embedding(vocab_size, d_model, padding_idx=PAD_ID)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=128, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers)

    def forward(self, ids, lengths):
        B, T = ids.shape
        positions = torch.arange(T, device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(positions)
        pad_mask = make_pad_mask(lengths, self.max_len)
        h = self.encoder(x, src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        return (h * keep).sum(1) / keep.sum(1)


def collate(seqs):
    lengths = torch.tensor([len(s) for s in seqs])
    ids = torch.full((len(seqs), int(lengths.max())), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    return ids, lengths


if __name__ == "__main__":
    torch.manual_seed(0)
    sentences = [[5, 8, 13, 2], [7, 7, 3], [9, 4, 11, 6, 10, 2], [12, 3]]
    ids, lengths = collate(sentences)
    model = SentenceEncoder(vocab_size=50)
    emb = model(ids, lengths)
    print("sentence embeddings:", tuple(emb.shape))
