import torch
import torch.nn as nn
import torch.nn.functional as F

ATOM_FEATURES = 16
BOND_FEATURES = 4
HIDDEN = 64


class MessagePassingLayer(nn.Module):
    """Edge-conditioned messages m_ij = MLP([h_i, h_j, e_ij]), summed at the receiving node."""

    def __init__(self, node_dim, edge_dim, out_dim):
        super().__init__()
        self.message = nn.Sequential(nn.Linear(2 * node_dim + edge_dim, out_dim), nn.ReLU())
        self.update = nn.Linear(node_dim + out_dim, out_dim)

    def forward(self, h, edge_index, edge_attr):
        src, dst = edge_index
        messages = self.message(torch.cat([h[src], h[dst], edge_attr], dim=1))   # (E, out_dim)
        aggregated = torch.zeros_like(h)
        aggregated.index_add_(0, dst, messages)
        return F.relu(self.update(torch.cat([h, aggregated], dim=1)))


class MoleculeRegressor(nn.Module):
    def __init__(self, atom_dim=ATOM_FEATURES, bond_dim=BOND_FEATURES, hidden=HIDDEN, n_layers=3):
        super().__init__()
        dims = [atom_dim] + [hidden] * n_layers
        self.layers = nn.ModuleList(
            [MessagePassingLayer(dims[i], bond_dim, dims[i + 1]) for i in range(n_layers)]
        )
        self.readout = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x, edge_index, edge_attr, batch, n_graphs):
        h = x
        for layer in self.layers:
            h = layer(h, edge_index, edge_attr)
        pooled = h.new_zeros(n_graphs, h.size(1)).index_add_(0, batch, h)        # sum pooling
        counts = torch.bincount(batch, minlength=n_graphs).clamp(min=1).unsqueeze(1)
        return self.readout(pooled / counts).squeeze(-1)


def random_molecule_batch(n_graphs, min_atoms=5, max_atoms=12):
    xs, edges, batch, offset = [], [], [], 0
    for g in range(n_graphs):
        n = int(torch.randint(min_atoms, max_atoms + 1, ()))
        xs.append(torch.randn(n, ATOM_FEATURES))
        chain = torch.stack([torch.arange(n - 1), torch.arange(1, n)]) + offset   # a chain backbone
        edges.append(torch.cat([chain, chain.flip(0)], dim=1))                    # both directions
        batch.append(torch.full((n,), g, dtype=torch.long))
        offset += n
    edge_index = torch.cat(edges, dim=1)
    edge_attr = torch.randn(edge_index.size(1), BOND_FEATURES)
    return torch.cat(xs), edge_index, edge_attr, torch.cat(batch)


if __name__ == "__main__":
    torch.manual_seed(0)
    n_graphs = 16
    x, edge_index, edge_attr, batch = random_molecule_batch(n_graphs)
    y = torch.randn(n_graphs)                  # e.g. a solubility value per molecule
    model = MoleculeRegressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        pred = model(x, edge_index, edge_attr, batch, n_graphs)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"epoch {epoch}: mse {loss.item():.4f}")
