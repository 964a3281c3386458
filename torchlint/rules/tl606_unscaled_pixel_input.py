from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class UnscaledPixelInput(Rule):
    """
    ## What it does
    Reported by `--runtime` only, at the call of the model: the float input of the top-level
    module in training mode holds only whole numbers in [0, 255], with a maximum above 1 (a
    `uint8` image converted with `.float()` and never scaled). The first three training inputs
    are looked at; nothing after that.

    ## Why is this bad?
    Networks and their default initialisations expect inputs of order 1. Values up to 255 make
    the first layer's activations and gradients hundreds of times too large: training diverges
    or crawls, and a learning rate tuned for it will not transfer to properly scaled data.

    ## Example
    ```python
    images = batch["image"].float()  # uint8 0-255
    logits = model(images)
    ```

    ## Use instead
    ```python
    images = batch["image"].float() / 255  # or torchvision's ToTensor() / ToDtype(scale=True)
    logits = model(images)
    ```
    """

    code = "TL606"
    name = "unscaled-pixel-input"
    summary = "Raw 0-255 pixel values are fed to the model as floats"
    severity = Severity.WARNING
    runtime_only = True
