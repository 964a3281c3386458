from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class StepWithoutGradients(Rule):
    """
    ## What it does
    Reported by `--runtime` only: `optimizer.step()` ran while none of the optimizer's
    parameters had a gradient (every `.grad` was `None`), at the `step()` call. Steps given a
    closure (`LBFGS`), which computes the gradients inside `step()`, are not checked.

    ## Why is this bad?
    Without gradients the step changes nothing (or, with weight decay or momentum, only decays
    the weights): the usual cause is a forgotten `loss.backward()`, or a `zero_grad()` moved
    between `backward()` and `step()`. The model does not train and nothing says so.

    ## Example
    ```python
    opt.zero_grad()
    loss = criterion(model(x), y)
    opt.step()
    ```

    ## Use instead
    ```python
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    ```
    """

    code = "TL605"
    name = "step-without-gradients"
    summary = "optimizer.step() ran while none of its parameters had a gradient"
    severity = Severity.ERROR
    runtime_only = True
