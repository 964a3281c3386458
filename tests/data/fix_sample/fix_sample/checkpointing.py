"""Saving and resuming training state, and an exponential moving average of the weights."""

from __future__ import annotations

import copy
import os
import shutil
from typing import Optional

import torch
import torch.nn as nn


def save_checkpoint(
    output_dir, model, optimizer, scheduler, scaler, epoch: int, best_top1: float, is_best: bool
) -> str:
    """Write `last.pt` atomically (a crash mid-write keeps the previous one) and copy it to `best.pt`."""
    os.makedirs(output_dir, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "epoch": epoch,
        "best_top1": best_top1,
    }
    path = os.path.join(output_dir, "last.pt")
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)
    if is_best:
        shutil.copyfile(path, os.path.join(output_dir, "best.pt"))
    return path


def load_checkpoint(path: str, model: nn.Module, optimizer=None, scheduler=None, scaler=None) -> tuple[int, float]:
    """Restore what `save_checkpoint` wrote; returns the epoch to start from and the best top-1."""
    state = torch.load(
        path,
        # Load onto the CPU first: the checkpoint may come from a machine with more GPUs.
        map_location="cpu",
    )
    model.load_state_dict(state["model"])
    for name, target in (("optimizer", optimizer), ("scheduler", scheduler), ("scaler", scaler)):
        if target is not None and name in state:
            target.load_state_dict(state[name])
    return state["epoch"] + 1, state.get("best_top1", 0.0)


def load_pretrained(model: nn.Module, path: str, strict: bool = False) -> list[str]:
    """Load backbone weights, skipping the classifier when the number of classes differs."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    state = state.get("model", state)
    own = model.state_dict()
    skipped = [key for key, value in state.items() if key in own and own[key].shape != value.shape]
    for key in skipped:
        del state[key]
    model.load_state_dict(state, strict=strict)
    return skipped


class ModelEma:
    """An exponential moving average of a model's weights, evaluated instead of the raw model."""

    def __init__(self, model: nn.Module, decay: float = 0.9998, device: Optional[torch.device] = None) -> None:
        self.module = copy.deepcopy(model).eval()
        self.decay = decay
        if device is not None:
            self.module.to(device)
        for param in self.module.parameters():
            param.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for ema_value, value in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_value.dtype.is_floating_point:
                ema_value.lerp_(value.to(ema_value.device), 1.0 - self.decay)
            else:
                ema_value.copy_(value)

    def state_dict(self) -> dict:
        return self.module.state_dict()
