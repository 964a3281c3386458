from __future__ import annotations

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.loops import enclosing_loops
from torchlint.analysis.names import dotted_name
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order


class OptimizerBuiltInLoop(Rule):
    """
    ## What it does
    Flags a `torch.optim` optimizer, or `torch.compile`, constructed inside a training loop (a
    loop that calls `backward()` or an optimizer `step()`, also in a nested loop) for a model
    that the loop does not build itself. Loops that build a new model each iteration (a sweep
    over learning rates, cross-validation folds) are left alone, and so is an outer loop over
    settings (`for device in ["cpu", "cuda"]:`) around the training loop; an outer loop over
    epochs (`for epoch in range(n)`, `while`) is reported. An optimizer rebuilt under a condition
    (`if (epoch + 1) % 20 == 0:`, a hand-made learning-rate decay) runs now and then, on purpose,
    and is left alone. The optimizer is a warning;
    `torch.compile` a note.

    ## Why is this bad?
    An optimizer keeps state between steps: momentum buffers, Adam's running moments and step
    count. Built anew every iteration, it starts from zero each time: momentum never builds up
    and Adam's first steps (bias-corrected from empty moments) are its only steps, so training
    behaves unlike the optimizer that was asked for. `torch.compile` in the loop wraps the model
    again every iteration: at best a lookup, at worst a recompilation per step.

    ## Example
    ```python
    for x, y in loader:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in loader:
        ...
    ```
    """

    code = "TL021"
    name = "optimizer-built-in-loop"
    summary = "Optimizer (or torch.compile) constructed inside the training loop: its state restarts every iteration"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._names_optim = "optim" in ctx.source or "compile" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._names_optim:
            return
        qualified = self.ctx.callee(node) or ""
        is_optimizer = qualified.startswith("torch.optim.") and qualified.count(".") == 2 \
            and qualified.rsplit(".", 1)[-1][:1].isupper()
        if not is_optimizer and qualified != "torch.compile":
            return
        loop = next((loop for loop in enclosing_loops(self.ctx.ancestors) if self.ctx.loops.is_training_loop(loop)), None)
        if loop is None or not node.args or _built_in(loop, node.args[0].value) or self._conditional_in(loop):
            return
        if not self.ctx.loops.iteration(loop).steps_each_iteration and not _counts_epochs(loop):
            return  # `for device in ["cpu", "cuda"]:` around a training loop: one run per setting
        if is_optimizer:
            self.report(
                node,
                f"`{self.ctx.code_for(node.func)}` is built anew every iteration of the training loop: its state "
                "(momentum, running moments, step count) restarts each time; build it once before the loop",
            )
        else:
            self.report(
                node,
                "`torch.compile` runs every iteration of the training loop; compile the model once before the loop",
                severity=Severity.NOTE,
            )

    def _conditional_in(self, loop: cst.For | cst.While) -> bool:
        """Built under an `if` in the loop (`if (epoch + 1) % 20 == 0:`): rebuilt now and then, on
        purpose (a hand-made learning-rate decay), not every iteration."""
        inside = self.ctx.ancestors[next(i for i, node in enumerate(self.ctx.ancestors) if node is loop) + 1:]
        return any(isinstance(node, cst.If) for node in inside)


def _built_in(loop: cst.For | cst.While, argument: cst.BaseExpression) -> bool:
    """What the optimizer is for (`model` in `model.parameters()`, `self.scale` in `[self.scale]`)
    is made in the loop itself: each iteration trains something new (a sweep, a fold)."""
    made = set(target_names(loop.target)) if isinstance(loop, cst.For) else set()
    for node in nodes_in_order(loop.body):
        if isinstance(node, cst.Assign):
            made.update(dotted_name(target.target) for target in node.targets)
    return any(
        isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) in made
        for node in (argument, *nodes_in_order(argument))
    )


def _counts_epochs(loop: cst.For | cst.While) -> bool:
    """An outer loop that repeats training (`for epoch in range(n)`, `while step < steps`), not one
    over settings."""
    if isinstance(loop, cst.While):
        return True
    target = dotted_name(loop.target) or ""
    if "epoch" in target.lower():
        return True
    return any(isinstance(node, cst.Name) and node.value in ("range", "trange") for node in nodes_in_order(loop.iter))
