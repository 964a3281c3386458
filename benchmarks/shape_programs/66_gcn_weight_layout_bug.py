"""Two-layer graph convolutional network for node classification on a random graph."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

N_NODES = 30
IN_FEATS = 12
HIDDEN = 16
N_CLASSES = 3


class GraphConv(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        # stored like nn.Linear: (out_dim, in_dim)
        self.weight = nn.Parameter(torch.empty(out_dim, in_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x, adj):
        support = x @ self.weight
        return adj @ support + self.bias


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GraphConv(IN_FEATS, HIDDEN)
        self.conv2 = GraphConv(HIDDEN, N_CLASSES)

    def forward(self, x, adj):
        h = F.dropout(F.relu(self.conv1(x, adj)), p=0.5, training=self.training)
        return self.conv2(h, adj)


def normalized_adjacency(n, p=0.15):
    a = (torch.rand(n, n) < p).float()
    a = torch.triu(a, diagonal=1)
    a = a + a.t() + torch.eye(n)
    d_inv_sqrt = a.sum(dim=1).pow(-0.5)
    return d_inv_sqrt[:, None] * a * d_inv_sqrt[None, :]


if __name__ == "__main__":
    torch.manual_seed(0)
    adj = normalized_adjacency(N_NODES)
    x = torch.randn(N_NODES, IN_FEATS)
    y = torch.randint(0, N_CLASSES, (N_NODES,))
    train_mask = torch.rand(N_NODES) < 0.5
    model = GCN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(3):
        model.train()
        out = model(x, adj)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("epoch", epoch, "loss", round(loss.item(), 4))
