"""Training entry point: `python -m fix_sample.train --data /path/to/imagenet --epochs 90`."""

from __future__ import annotations

import argparse
import logging
import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from fix_sample.checkpointing import load_checkpoint, save_checkpoint
from fix_sample.data import ImageFolderDataset, Mixup, build_loader, normalize
from fix_sample.evaluate import evaluate
from fix_sample.losses import LabelSmoothingCrossEntropy, SoftTargetCrossEntropy
from fix_sample.models import build_model
from fix_sample.schedule import cosine_with_warmup

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    data: str
    variant: str = "small"
    epochs: int = 90
    batch_size: int = 128
    lr: float = 1e-3
    warmup_epochs: int = 5
    clip_grad: float = 1.0
    amp: bool = True
    mixup: bool = True
    freeze_stem: bool = False
    resume: str = ""
    output: str = "checkpoints"
    log_every: int = 50
    history: list = field(default_factory=list)


def parse_args() -> TrainConfig:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True)
    parser.add_argument("--variant", default="small", choices=("tiny", "small", "base"))
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-amp", dest="amp", action="store_false")
    parser.add_argument("--no-mixup", dest="mixup", action="store_false")
    parser.add_argument("--freeze-stem", action="store_true")
    parser.add_argument("--resume", default="")
    parser.add_argument("--output", default="checkpoints")
    args = parser.parse_args()
    return TrainConfig(**vars(args))


def build_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    """Adam, with no weight decay on biases and norm parameters (1-d tensors)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
    groups = [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.Adam(groups, lr=lr, betas=(0.9, 0.999), weight_decay=0.05)


def freeze(module: nn.Module) -> None:
    for param in module.parameters():
        param.require_grad = False


def train_one_epoch(model, loader, criterion, optimizer, scheduler, scaler, mixup, device, config, epoch):
    model.train()
    running_loss = 0.0
    seen = 0
    start = time.perf_counter()
    for step, (images, labels) in enumerate(loader):
        images = normalize(images.to(device, non_blocking=True))
        labels = labels.to(device, non_blocking=True)
        if mixup is not None:
            images, labels = mixup(images, labels)

        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.amp.autocast(
            enabled=config.amp,  # bf16 would not need the scaler, fp16 does
            dtype=torch.float16,
        ):
            logits = model(images)
            loss = criterion(logits, labels)
        if loss == float("nan"):
            raise FloatingPointError(f"loss is NaN at epoch {epoch}, step {step}")

        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm(model.parameters(), config.clip_grad)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()

        running_loss += loss
        seen += 1
        if step % config.log_every == 0:
            rate = (step + 1) * images.shape[0] / (time.perf_counter() - start)
            logger.info(
                "epoch %d step %d loss %.4f lr %.2e (%.0f img/s)",
                epoch, step, loss.item(), optimizer.param_groups[0]["lr"], rate,
            )
    return float(running_loss) / max(seen, 1)


def main() -> None:
    config = parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_set = ImageFolderDataset(f"{config.data}/train", loader=_read_image)
    val_set = ImageFolderDataset(f"{config.data}/val", loader=_read_image)
    train_loader = build_loader(train_set, config.batch_size, train=True)
    val_loader = build_loader(val_set, config.batch_size, train=False)

    model = build_model(config.variant, num_classes=len(train_set.classes)).to(device)
    if config.freeze_stem:
        freeze(model.stem)
    mixup = Mixup(num_classes=len(train_set.classes)) if config.mixup else None
    criterion = SoftTargetCrossEntropy() if mixup is not None else LabelSmoothingCrossEntropy(0.1)
    optimizer = build_optimizer(model, config.lr)
    steps_per_epoch = len(train_loader)
    scheduler = cosine_with_warmup(optimizer, config.warmup_epochs * steps_per_epoch, config.epochs * steps_per_epoch)
    scaler = torch.cuda.amp.GradScaler(enabled=config.amp and device.type == "cuda")

    start_epoch, best_top1 = 0, 0.0
    if config.resume:
        start_epoch, best_top1 = load_checkpoint(config.resume, model, optimizer, scheduler, scaler)

    for epoch in range(start_epoch, config.epochs):
        train_loss = train_one_epoch(
            model, train_loader, criterion, optimizer, scheduler, scaler, mixup, device, config, epoch
        )
        metrics = evaluate(model, val_loader, device)
        config.history.append({"epoch": epoch, "train_loss": train_loss, **metrics})
        logger.info("epoch %d: train loss %.4f, top-1 %.2f%%", epoch, train_loss, metrics["top1"])
        is_best = metrics["top1"] > best_top1
        best_top1 = max(best_top1, metrics["top1"])
        save_checkpoint(config.output, model, optimizer, scheduler, scaler, epoch, best_top1, is_best)
        if math.isnan(train_loss):
            logger.error("training diverged at epoch %d", epoch)
            break


def _read_image(path: str):
    from PIL import Image
    import numpy as np

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


if __name__ == "__main__":
    main()
