from __future__ import annotations

import re

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
    With several optimizers (a GAN's generator and discriminator), each stepped optimizer needs its
    own clearing: `optimizer_D.zero_grad()` does not clear the generator's gradients that
    `optimizer_G.step()` applies. A file of another framework's autograd that imports nothing of
    torch (NVIDIA Warp's `tape.backward(loss)` and `tape.zero()`, JAX, TensorFlow) is not checked,
    nor by the other rules about training loops.

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
            if not iteration.calls_backward:
                continue
            # A fresh optimizer each iteration (e.g. per trial) starts from fresh parameters.
            created = {event.target_text for event in iteration.of_kind(Kind.OPTIMIZER_CREATED)}
            for step in iteration.of_kind(Kind.OPTIMIZER_STEP):
                if step.target_text in created:
                    continue
                others = self._only_others_cleared(iteration, step)
                if iteration.clears_gradients and not others:
                    continue
                optimizer = self.ctx.code_for(step.target) if step.target is not None else "optimizer"
                cleared = (
                    f"clears only the gradients of {', '.join(f'`{name}`' for name in others)}, so those "
                    f"`{optimizer}` applies" if others else "never clears gradients, so they"
                )
                self.report(
                    step.node,
                    f"optimizer step in a loop that calls `backward()` but {cleared} accumulate across "
                    f"iterations; call `{optimizer}.zero_grad()` each iteration",
                    related=self.ctx.project.related(_elsewhere(iteration, step), self.ctx.path),
                )

    def _only_others_cleared(self, iteration, step) -> list[str]:
        """The other optimizers stepped in the loop, when every clearing in it is one of their
        `zero_grad()`s (and none is an alias of this one); else []."""
        this = step.target_text
        stepped = {event.target_text for event in iteration.of_kind(Kind.OPTIMIZER_STEP)} - {this, None}
        clearings = iteration.of_kind(Kind.ZERO_GRAD, Kind.GRAD_SET)
        if this is None or not clearings:
            return []
        names = {event.target_text for event in clearings}
        if not all(event.kind is Kind.ZERO_GRAD for event in clearings) or not names <= stepped:
            return []
        if any(_aliased(self.ctx.source, this, other) for other in names):
            return []
        return sorted(names)


def _aliased(source: str, first: str, second: str) -> bool:
    """`opt = self.optimizer`: two names of one optimizer."""
    return any(
        re.search(rf"(?<![\w.]){re.escape(a)}\s*=\s*{re.escape(b)}(?![\w.(\[])", source)
        for a, b in ((first, second), (second, first))
    )


def _elsewhere(iteration, step) -> list:
    """Where functions of other project files called in the loop run its backward() and this step."""
    return [
        event.elsewhere for event in iteration.events
        if event.elsewhere is not None and (event.kind is Kind.BACKWARD or event is step)
    ]
