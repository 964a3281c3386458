import torch
import torch.nn as nn
import torch.nn.functional as F

SRC_VOCAB = 120
TGT_VOCAB = 90
EMB_DIM = 32
ENC_HID = 64
DEC_HID = 64
PAD, BOS = 0, 1


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(SRC_VOCAB, EMB_DIM, padding_idx=PAD)
        self.rnn = nn.GRU(EMB_DIM, ENC_HID, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * ENC_HID, DEC_HID)

    def forward(self, src):
        outputs, h_n = self.rnn(self.embedding(src))        # outputs (B, S, 2 * ENC_HID)
        final = torch.cat([h_n[0], h_n[1]], dim=1)           # (B, 2 * ENC_HID)
        return outputs, torch.tanh(self.bridge(final))       # decoder init (B, DEC_HID)


class AttnDecoder(nn.Module):
    """Luong-style decoder with dot-product attention over the encoder outputs."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(TGT_VOCAB, EMB_DIM, padding_idx=PAD)
        self.cell = nn.GRUCell(EMB_DIM + 2 * ENC_HID, DEC_HID)
        self.out = nn.Linear(DEC_HID + 2 * ENC_HID, TGT_VOCAB)

    def attend(self, hidden, enc_outputs):
        scores = torch.bmm(enc_outputs, hidden.unsqueeze(2)).squeeze(2)    # (B, S)
        weights = F.softmax(scores, dim=1)
        return torch.bmm(weights.unsqueeze(1), enc_outputs).squeeze(1)      # (B, 2 * ENC_HID)

    def forward(self, tokens, hidden, enc_outputs):
        context = self.attend(hidden, enc_outputs)
        hidden = self.cell(torch.cat([self.embedding(tokens), context], dim=1), hidden)
        logits = self.out(torch.cat([hidden, context], dim=1))
        return logits, hidden


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = AttnDecoder()

    def forward(self, src, tgt):
        enc_outputs, hidden = self.encoder(src)
        inputs = torch.full((src.size(0),), BOS, dtype=torch.long)
        step_logits = []
        for t in range(tgt.size(1)):                         # teacher forcing
            logits, hidden = self.decoder(inputs, hidden, enc_outputs)
            step_logits.append(logits)
            inputs = tgt[:, t]
        return torch.stack(step_logits, dim=1)              # (B, T, V)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = torch.randint(2, SRC_VOCAB, (8, 15))
    tgt = torch.randint(2, TGT_VOCAB, (8, 11))
    for step in range(2):
        logits = model(src, tgt)
        loss = F.cross_entropy(logits.reshape(-1, TGT_VOCAB), tgt.reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")
