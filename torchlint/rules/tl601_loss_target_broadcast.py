from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class LossTargetBroadcast(Rule):
    """
    ## What it does
    Reported by `--runtime` only: a loss (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`,
    `binary_cross_entropy`...) was called with an input and a target of different shapes that
    broadcast, which PyTorch only announces with a "Using a target size ... that is different to
    the input size" warning.

    ## Why is this bad?
    Broadcasting a `(N, 1)` prediction against an `(N,)` target builds an `(N, N)` matrix of
    pairwise differences: the loss is the wrong quantity, its gradient trains the model towards
    the mean of the targets, and nothing fails. Where the code shows both shapes, TL104 reports
    it without running anything (and the run confirms TL104 there instead of adding this
    finding); elsewhere shapes are only known at run time, which is why this finding comes from
    the runtime mode.

    ## Example
    ```python
    pred = model(x)          # (N, 1)
    loss = F.mse_loss(pred, y)  # y: (N,)
    ```

    ## Use instead
    ```python
    loss = F.mse_loss(pred.squeeze(-1), y)
    ```
    """

    code = "TL601"
    name = "loss-target-broadcast"
    summary = "A loss was called with input and target shapes that broadcast"
    severity = Severity.ERROR
    runtime_only = True
