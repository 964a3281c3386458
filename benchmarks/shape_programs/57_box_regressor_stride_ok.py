"""Single-object localisation: a small CNN predicts a class and one bounding box per image."""
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG_SIZE = 64
N_CLASSES = 5
BATCH = 8
STEPS = 2
FEAT_HW = IMG_SIZE // 8


class BoxNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1),
            nn.ReLU(inplace=True),
        )
        self.fc = nn.Linear(64 * FEAT_HW * FEAT_HW, 128)
        self.cls_head = nn.Linear(128, n_classes)
        self.box_head = nn.Linear(128, 4)

    def forward(self, x):
        h = self.backbone(x)
        h = h.flatten(1)
        h = F.relu(self.fc(h))
        logits = self.cls_head(h)
        boxes = torch.sigmoid(self.box_head(h))  # normalised (cx, cy, w, h)
        return logits, boxes


def synthetic_batch(batch_size):
    images = torch.randn(batch_size, 3, IMG_SIZE, IMG_SIZE)
    labels = torch.randint(0, N_CLASSES, (batch_size,))
    boxes = torch.rand(batch_size, 4)
    return images, labels, boxes


if __name__ == "__main__":
    torch.manual_seed(0)
    model = BoxNet(N_CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(STEPS):
        images, labels, gt_boxes = synthetic_batch(BATCH)
        logits, pred_boxes = model(images)
        loss = F.cross_entropy(logits, labels) + 5.0 * F.smooth_l1_loss(pred_boxes, gt_boxes)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")
