from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import Kind
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class MissingZeroGrad(Rule):
    """
    ## What it does
    Flags an optimizer step (`optimizer.step()`, `scaler.step(optimizer)`) in a loop that calls
    `.backward()` but never clears the gradients: no `zero_grad()`, no `p.grad = None`, no
    `p.grad.zero_()` anywhere in the loop, also counting the functions of the same file that the
    loop calls (a `train_step(batch)` helper, `self.training_step(batch)`) and the functions it
    imports from other files of the project (with notes pointing to their `backward()` and `step()`).

    ## Why is this bad?
    `backward()` adds into `.grad`; it never overwrites it. Without clearing, each step applies the
    sum of every gradient computed so far: the effective learning rate grows with the step count
    and the model diverges or trains far worse, with no error.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```
    Gradient accumulation clears under a condition, which is fine:
    `if (i + 1) % accum == 0: optimizer.step(); optimizer.zero_grad()`.
    """

    code = "TL001"
    name = "missing-zero-grad"
    summary = "Optimizer step in a loop that never clears gradients: they accumulate across iterations"
    severity = Severity.ERROR

    def leave_Module(self, node: cst.Module) -> None:
        for iteration in self.ctx.loops.training_loops():
            if not iteration.calls_backward or iteration.clears_gradients:
                continue
            # A fresh optimizer each iteration (e.g. per trial) starts from fresh parameters.
            created = {event.target_text for event in iteration.of_kind(Kind.OPTIMIZER_CREATED)}
            for step in iteration.of_kind(Kind.OPTIMIZER_STEP):
                if step.target_text in created:
                    continue
                optimizer = self.ctx.code_for(step.target) if step.target is not None else "optimizer"
                self.report(
                    step.node,
                    "optimizer step in a loop that calls `backward()` but never clears gradients, so they "
                    f"accumulate across iterations; call `{optimizer}.zero_grad()` each iteration",
                    related=self.ctx.project.related(_elsewhere(iteration, step), self.ctx.path),
                )


def _elsewhere(iteration, step) -> list:
    """Where functions of other project files called in the loop run its backward() and this step."""
    return [
        event.elsewhere for event in iteration.events
        if event.elsewhere is not None and (event.kind is Kind.BACKWARD or event is step)
    ]
