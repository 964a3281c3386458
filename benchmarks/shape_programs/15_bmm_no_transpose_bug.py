"""Extractive QA: score each passage token as an answer start using question attention."""
import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN = 40


class BiEncoder(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.passage_rnn = nn.GRU(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.question_rnn = nn.GRU(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.start = nn.Linear(2 * hidden, 1)

    def align(self, passage, question):
        # passage: (B, P, H), question: (B, Q, H)
        sim = torch.bmm(passage, question)
        weights = F.softmax(sim, dim=-1)
        return torch.bmm(weights, question)

    def forward(self, passage_ids, question_ids):
        p, _ = self.passage_rnn(self.embed(passage_ids))
        q, _ = self.question_rnn(self.embed(question_ids))
        aligned = self.align(p, q)
        return self.start(torch.cat([p, aligned], dim=-1)).squeeze(-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = BiEncoder(vocab=300, hidden=HIDDEN)
    passages = torch.randint(0, 300, (2, 30))
    questions = torch.randint(0, 300, (2, 8))
    start_positions = torch.tensor([3, 17])
    start_logits = model(passages, questions)
    loss = F.cross_entropy(start_logits, start_positions)
    loss.backward()
    print(start_logits.shape, loss.item())
