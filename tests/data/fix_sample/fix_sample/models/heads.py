"""Classification heads. This file has Windows (CRLF) line endings on purpose: the fixer must keep them."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ClassifierHead(nn.Module):
    """Dropout and a linear layer over pooled features; returns logits."""

    def __init__(self, in_features: int, num_classes: int, drop_rate: float = 0.0) -> None:
        super().__init__()
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.fc(self.drop(pooled))

    def class_prototypes(self) -> np.ndarray:
        """The unit-normalised rows of the classifier weight, one prototype per class."""
        weight = self.fc.weight
        return (weight / weight.norm(dim=1, keepdim=True)).numpy()


class AttentionPoolHead(nn.Module):
    """Pool a token sequence with one learned query instead of averaging, then classify."""

    def __init__(self, dim: int, num_classes: int, attn_drop: float = 0.1) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.zeros(1, 1, dim))
        self.key = nn.Linear(dim, dim)
        self.fc = nn.Linear(dim, num_classes)
        self.attn_drop = attn_drop
        nn.init.normal_(self.query, std=dim**-0.5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        scores = (self.query * self.key(tokens)).sum(-1) * tokens.shape[-1] ** -0.5
        weights = F.dropout(F.softmax(scores), p=self.attn_drop)
        pooled = (weights.unsqueeze(-1) * tokens).sum(dim=1)
        return self.fc(pooled)


def energy_score(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Free energy of the logits, an out-of-distribution score (lower means more in-distribution)."""
    scaled = logits / temperature
    return -temperature * torch.log(torch.sum(torch.exp(scaled), dim=-1))


class MultiLabelHead(nn.Module):
    """One independent sigmoid per label, trained with binary cross-entropy."""

    def __init__(self, in_features: int, num_labels: int, pos_weight: Optional[torch.Tensor] = None) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, num_labels)
        self.register_buffer("pos_weight", pos_weight if pos_weight is not None else torch.ones(num_labels))

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.fc(pooled)

    def loss(self, pooled: torch.Tensor, targets: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
        logits = self(pooled)
        targets = targets.float() * (1.0 - label_smoothing) + 0.5 * label_smoothing
        weight = torch.where(targets > 0.5, self.pos_weight, torch.ones_like(self.pos_weight))
        return F.binary_cross_entropy(
            torch.sigmoid(logits),  # probabilities per label
            targets,
            weight=weight,
            reduction="mean",
        )

    @torch.no_grad()
    def predict(self, pooled: torch.Tensor, threshold: float = 0.5) -> torch.Tensor:
        return torch.sigmoid(self(pooled)) > threshold


def log_one_minus_sigmoid(logits: torch.Tensor) -> torch.Tensor:
    """log(1 - σ(x)), the log-probability of the negative class."""
    probs = torch.sigmoid(logits)
    return torch.log(1 - probs)
