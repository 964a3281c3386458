"""Evaluation: top-k accuracy, a confusion matrix, calibration error and feature export."""

from __future__ import annotations

from typing import Iterable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from fix_sample.data import normalize


def topk_correct(logits: torch.Tensor, labels: torch.Tensor, topk: Iterable[int] = (1, 5)) -> dict[int, int]:
    """How many samples have their label among the k highest logits, for each k."""
    ks = tuple(topk)
    _, predicted = logits.topk(max(ks), dim=1)
    hits = predicted.eq(labels[:, None])
    return {k: int(hits[:, :k].any(dim=1).sum()) for k in ks}


@torch.no_grad()
def evaluate(model: nn.Module, loader, device: torch.device, num_classes: int = 0) -> dict[str, float]:
    """Top-1/top-5 accuracy (in percent), mean loss and, with `num_classes`, the confusion matrix."""
    was_training = model.training
    model.eval()
    total, loss_sum = 0, 0.0
    correct = {1: 0, 5: 0}
    confusion = np.zeros((num_classes, num_classes), dtype=np.int64) if num_classes else None
    for images, labels in loader:
        images = normalize(images.to(device, non_blocking=True))
        labels = labels.to(device, non_blocking=True)
        logits = model(images)
        loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
        for k, hits in topk_correct(logits, labels).items():
            correct[k] += hits
        total += labels.numel()
        if confusion is not None:
            predicted = logits.argmax(dim=1).cpu().numpy()
            np.add.at(confusion, (labels.numpy(), predicted), 1)
    model.train(was_training)
    metrics = {"top1": 100.0 * correct[1] / total, "top5": 100.0 * correct[5] / total, "loss": loss_sum / total}
    if confusion is not None:
        metrics["mean_class_accuracy"] = float(np.mean(np.diag(confusion) / np.maximum(confusion.sum(1), 1)))
    return metrics


@torch.no_grad()
def predict_with_flip(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Class probabilities averaged over the image and its horizontal mirror."""
    logits = model(images) + model(torch.flip(images, dims=(3,)))
    return F.softmax(logits / 2, dim=1)


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, bins: int = 15) -> float:
    """ECE: the gap between confidence and accuracy, averaged over equal-width confidence bins."""
    confidence, predicted = probs.max(dim=1)
    accurate = predicted.eq(labels).float()
    edges = torch.linspace(0, 1, bins + 1, device=probs.device)
    ece = torch.zeros((), device=probs.device)
    for low, high in zip(edges[:-1], edges[1:]):
        in_bin = (confidence > low) & (confidence <= high)
        if in_bin.any():
            weight = in_bin.float().mean()
            ece += weight * (confidence[in_bin].mean() - accurate[in_bin].mean()).abs()
    return float(ece)


@torch.no_grad()
def export_features(model: nn.Module, images: torch.Tensor, device: torch.device) -> np.ndarray:
    """Pooled backbone features of a batch, as a NumPy array for a linear probe or t-SNE."""
    model.eval()
    features = model.forward_features(normalize(images.to(device))).mean(dim=1)  # noqa: TL101
    return features.cpu().numpy()
