from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class NonFiniteValues(Rule):
    """
    ## What it does
    Reported by `--runtime` only: the first optimizer step at which a parameter or its gradient
    held NaN or Inf, with the parameter's name (`encoder.fc1.weight`), once per optimizer: the
    first one to go is the lead, the others follow from it. Reported at the `step()` call.

    ## Why is this bad?
    Once one value is NaN, every parameter it touches becomes NaN within a few steps and the run
    is lost, but training loops rarely check: the loss prints `nan` and the script carries on for
    hours. A learning rate too large for the data, a division by a zero norm, `log(0)` or an fp16
    overflow without a `GradScaler` are the usual causes; the step and the parameter named here
    say where to look. The check keeps its flags on the device and reads them every few seconds,
    so it adds no host-device sync per step.

    ## Example
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=1e4)  # far too large for unscaled inputs
    for x, y in loader:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()  # step 3: fc1.weight and 3 more first held NaN or Inf
    ```

    ## Use instead
    ```python
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    ```
    """

    code = "TL603"
    name = "non-finite-values"
    summary = "A parameter or its gradient became NaN or Inf during training"
    severity = Severity.ERROR
    runtime_only = True
