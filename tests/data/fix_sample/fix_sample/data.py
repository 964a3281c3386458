"""Data helpers: an image-folder dataset, normalisation, mixup and a padding collate function."""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

IMAGENET_MEAN = torch.Tensor([0.485, 0.456, 0.406])
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225])
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp")


def find_images(root: str) -> tuple[list[tuple[str, int]], list[str]]:
    """(path, class index) for every image under root/<class>/, and the sorted class names."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
    samples = []
    for index, name in enumerate(classes):
        for dirpath, _, filenames in sorted(os.walk(os.path.join(root, name))):
            for filename in sorted(filenames):
                if filename.lower().endswith(IMAGE_EXTENSIONS):
                    samples.append((os.path.join(dirpath, filename), index))
    return samples, classes


class ImageFolderDataset(Dataset):
    def __init__(self, root: str, loader: Callable[[str], np.ndarray], transform: Optional[Callable] = None) -> None:
        self.samples, self.classes = find_images(root)
        if not self.samples:
            raise FileNotFoundError(f"no images under {root}")
        self.loader = loader
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[index]
        array = self.loader(path)  # H × W × C, uint8
        image = torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1)
        if self.transform is not None:
            image = self.transform(image)
        return image, label


def normalize(
    images: torch.Tensor, mean: torch.Tensor = IMAGENET_MEAN, std: torch.Tensor = IMAGENET_STD
) -> torch.Tensor:
    """uint8 (B, C, H, W) images to float, scaled to [0, 1] and standardised per channel."""
    images.float()
    images = images / 255.0
    return (images - mean.view(1, -1, 1, 1).to(images.device)) / std.view(1, -1, 1, 1).to(images.device)


def random_resized_crop_box(
    height: int, width: int, scale: tuple[float, float] = (0.08, 1.0), ratio: tuple[float, float] = (3 / 4, 4 / 3)
) -> tuple[int, int, int, int]:
    """(top, left, crop height, crop width) of an Inception-style random crop."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return random.randint(0, height - h), random.randint(0, width - w), h, w
    # Fall back to a centre crop.
    side = min(height, width)
    return (height - side) // 2, (width - side) // 2, side, side


@dataclass
class Mixup:
    """Mixup and CutMix on a batch; returns mixed images and soft targets."""

    num_classes: int
    mixup_alpha: float = 0.8
    cutmix_alpha: float = 1.0
    switch_prob: float = 0.5
    label_smoothing: float = 0.1

    def _soft_targets(self, labels: torch.Tensor, lam: float) -> torch.Tensor:
        off = self.label_smoothing / self.num_classes
        on = 1.0 - self.label_smoothing + off
        one_hot = torch.full((labels.size(0), self.num_classes), off, device=labels.device)
        one_hot.scatter_(1, labels.unsqueeze(1), on)
        return one_hot * lam + one_hot.flip(0) * (1.0 - lam)

    def __call__(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if random.random() < self.switch_prob:
            lam = float(np.random.beta(self.cutmix_alpha, self.cutmix_alpha))
            H, W = images.shape[-2:]
            cut_h, cut_w = int(H * math.sqrt(1 - lam)), int(W * math.sqrt(1 - lam))
            cy, cx = random.randint(0, H - 1), random.randint(0, W - 1)
            top, bottom = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, H)
            left, right = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, W)
            images[:, :, top:bottom, left:right] = images.flip(0)[:, :, top:bottom, left:right]
            lam = 1.0 - (bottom - top) * (right - left) / (H * W)
        else:
            lam = float(np.random.beta(self.mixup_alpha, self.mixup_alpha))
            images = images * lam + images.flip(0) * (1.0 - lam)
        return images, self._soft_targets(labels, lam)


def pad_collate(batch: Sequence[tuple[torch.Tensor, int]], pad_value: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack images of different sizes by padding them to the largest height and width."""
    images, labels = zip(*batch)
    max_h = max(image.shape[-2] for image in images)
    max_w = max(image.shape[-1] for image in images)
    out = images[0].new_full((len(images), images[0].shape[0], max_h, max_w), pad_value)
    for i, image in enumerate(images):
        out[i, :, : image.shape[-2], : image.shape[-1]] = image
    return out, torch.tensor(labels, dtype=torch.long)


def replace_missing(values: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """Replace the NaNs of a feature tensor (missing measurements) with `fill`."""
    missing = values == float("nan")
    return values.masked_fill(missing, fill)


def build_loader(dataset: Dataset, batch_size: int, train: bool, workers: int = 4) -> DataLoader:
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=train,
        num_workers=workers,
        pin_memory=torch.cuda.is_available(),
        drop_last=train,
        persistent_workers=workers > 0,
        collate_fn=pad_collate,
    )


def seed_worker(worker_id: int) -> None:
    """Seed numpy and random in each DataLoader worker from torch's per-worker seed."""
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed + worker_id)
    random.seed(seed + worker_id)
