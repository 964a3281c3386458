"""Losses: label-smoothed cross-entropy, focal loss, knowledge distillation and a contrastive loss."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class LabelSmoothingCrossEntropy(nn.Module):
    """Cross-entropy against a target that puts `1 - smoothing` on the label and spreads the rest."""

    def __init__(self, smoothing: float = 0.1) -> None:
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must lie in [0, 1), got {smoothing}")
        self.smoothing = smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        log_probs = F.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
        uniform = -log_probs.mean(dim=-1)
        return ((1.0 - self.smoothing) * nll + self.smoothing * uniform).mean()


class SoftTargetCrossEntropy(nn.Module):
    """Cross-entropy against soft targets, as produced by mixup and cutmix."""

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.sum(-target * F.log_softmax(logits, dim=-1), dim=-1).mean()


def focal_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    alpha: float = 0.25,
    gamma: float = 2.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Sigmoid focal loss (Lin et al., 2017): down-weights the easy examples of a dense detector."""
    probs = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = probs * targets + (1 - probs) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    temperature: float = 4.0,
) -> torch.Tensor:
    """KL(teacher || student) on temperature-softened distributions (Hinton et al., 2015)."""
    τ = temperature
    teacher_probs = F.softmax(teacher_logits / τ, dim=-1)
    student_log_probs = (student_logits / τ).softmax(dim=-1).log()
    kl = F.kl_div(student_log_probs, teacher_probs, reduction="batchmean")
    # The τ² factor keeps gradient magnitudes comparable across temperatures.
    return kl * τ**2


def info_nce(queries: torch.Tensor, keys: torch.Tensor, temperature: float = 0.07) -> torch.Tensor:
    """InfoNCE between two views: row i of `queries` matches row i of `keys`."""
    queries = F.normalize(queries, dim=1)
    keys = F.normalize(keys, dim=1)
    logits = queries @ keys.t() / temperature
    labels = torch.arange(queries.shape[0], device=queries.device)
    return F.cross_entropy(logits, labels)


def centred_similarity(features: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between samples after removing each feature's batch mean."""
    B, D = features.shape
    centred = features - features.mean(dim=0)
    # Per-sample scale, so that the similarity does not depend on the feature norm.
    centred = centred / centred.norm(dim=1)
    return centred @ centred.t() / D


def log_cosh_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log(cosh(x)): quadratic near zero, linear for large errors (a smooth Huber)."""
    error = prediction - target
    return torch.mean(error + F.softplus(-2.0 * error) - torch.log(torch.tensor(2.0)))


def poisson_nll(log_rate: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood of counts under Poisson rates given in log space."""
    rate = torch.exp(log_rate)
    return (rate - counts * log_rate + torch.lgamma(counts + 1)).mean()


def tversky_loss(probs: torch.Tensor, target: torch.Tensor, alpha: float = 0.7, eps: float = 1e-6) -> torch.Tensor:
    """Tversky loss for segmentation; alpha weights false negatives, 1 - alpha false positives."""
    dims = tuple(range(1, probs.ndim))
    true_pos = (probs * target).sum(dims)
    false_neg = ((1 - probs) * target).sum(dims)
    false_pos = (probs * (1 - target)).sum(dims)
    index = (true_pos + eps) / (true_pos + alpha * false_neg + (1 - alpha) * false_pos + eps)
    # Log form: penalise small overlaps harder than 1 - index does.
    return -torch.log(index + 1).mean()
