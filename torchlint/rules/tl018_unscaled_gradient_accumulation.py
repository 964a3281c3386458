from __future__ import annotations

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.loops import Event, Iteration, Kind
from torchlint.analysis.names import method_name
from torchlint.analysis.torch_api import looks_like_loss
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# `accelerator.backward(loss)` inside `accelerator.accumulate(model)` scales the loss itself.
_SCALING_OWNERS = ("accelerator", "fabric", "self")


class UnscaledGradientAccumulation(Rule):
    """
    ## What it does
    Flags gradient accumulation whose loss is not divided by the number of accumulated batches: a
    loop calls `loss.backward()` on every iteration and `optimizer.step()` only every N (under
    `if (i + 1) % N == 0:`, with `zero_grad()` there too, or nowhere else), and the loss it
    back-propagates is a loss computed in the loop (`criterion(...)`, `F.cross_entropy(...)`,
    `model(...).loss`) that no statement of the loop divides or multiplies (`loss = loss / N`,
    `loss /= N`, `(loss / N).backward()`, `criterion(...) / N`). The same holds for the form with
    an inner loop of micro steps (`for micro_step in range(N):` with the backward, the optimizer
    stepping after it; nanoGPT's form), where a loss unpacked from the model's outputs
    (`logits, loss = model(x, y)`) counts as a loss by its name. Not flagged: `accelerator.backward`
    and Lightning's `self.backward` (they scale it themselves), a loss from a helper whose scaling
    is out of sight, and loops that clear the gradients every iteration (nothing accumulates).

    ## Why is this bad?
    `backward()` adds to `.grad`: after N micro-batches the gradient is the sum of N batch
    gradients, N times the gradient of one batch of the same total size. Each optimizer step is N
    times too large, as if the learning rate were multiplied by N: training becomes unstable or
    diverges when N is raised, and results do not match training with the large batch.

    ## Example
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```
    """

    code = "TL018"
    name = "unscaled-gradient-accumulation"
    summary = "Gradient accumulation without dividing the loss by the number of accumulated batches"
    severity = Severity.WARNING

    def leave_Module(self, node: cst.Module) -> None:
        for iteration in self.ctx.loops.training_loops():
            backward = self._accumulating_backward(iteration) or self._micro_step_backward(iteration)
            if backward is None or not isinstance(backward.target, cst.Name):
                continue
            loss = backward.target.value
            assigned = _assignments(iteration.owner.body, loss)
            if not assigned or any(_scaled(value) for value in assigned) or not looks_like_loss(assigned[-1]):
                continue
            self.report(
                backward.node,
                f"`{loss}` is back-propagated every batch and the optimizer steps every few: the gradients of those "
                f"batches add up, so each step is that many times too large; divide `{loss}` by the number of "
                "accumulated batches before `backward()`",
            )

    @staticmethod
    def _accumulating_backward(iteration: Iteration) -> Event | None:
        """The loop's one backward of every iteration, when its optimizer steps only under a
        throttle (`if (i + 1) % N == 0:`) and nothing clears the gradients more often."""
        own = [event for event in iteration.events if not event.loops and not event.via]
        backwards = [event for event in own if event.kind is Kind.BACKWARD]
        steps = [event for event in own if event.kind is Kind.OPTIMIZER_STEP]
        clears = [event for event in own if event.kind in (Kind.ZERO_GRAD, Kind.GRAD_SET)]
        if len(backwards) != 1 or backwards[0].conditional or not steps:
            return None
        if not all(event.throttled for event in (*steps, *clears)):
            return None
        call = backwards[0].node
        owner = call.func.value if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) else None
        if method_name(call) == "backward" and isinstance(owner, cst.Name) and owner.value in _SCALING_OWNERS:
            return None
        return backwards[0]


    @staticmethod
    def _micro_step_backward(iteration: Iteration) -> Event | None:
        """nanoGPT's form: the step's own loop steps once, after an inner `for micro_step in
        range(N):` loop whose one backward runs every micro step, clearing nothing there."""
        own = [event for event in iteration.events if not event.via]
        steps = [event for event in own if event.kind is Kind.OPTIMIZER_STEP and not event.loops]
        backwards = [event for event in own if event.kind is Kind.BACKWARD]
        if not steps or len(backwards) != 1 or len(backwards[0].loops) != 1 or backwards[0].conditional:
            return None
        inner = backwards[0].loops[0]
        if not _counts_micro_steps(inner) or any(
                event.kind in (Kind.ZERO_GRAD, Kind.GRAD_SET, Kind.OPTIMIZER_STEP) and inner in event.loops for event in own):
            return None
        return backwards[0]


def _counts_micro_steps(loop) -> bool:
    """`for micro_step in range(gradient_accumulation_steps):` (not a loop over data)."""
    return isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name) \
        and loop.iter.func.value == "range"


# `logits, loss = model(x, y)`: an unpacked value named as a loss stands in as `outputs.loss`.
_UNPACKED_LOSS = cst.Attribute(cst.Name("outputs"), cst.Name("loss"))


def _assignments(block: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values `name = ...` and `name /= ...` statements of the block give it, in order (an
    augmented assignment counts as its whole expression), nested functions left out."""
    found: list[cst.BaseExpression] = []
    for node in nodes_in_order(block):
        if isinstance(node, cst.Assign) and any(
                isinstance(target.target, cst.Name) and target.target.value == name for target in node.targets):
            found.append(node.value)
        elif isinstance(node, cst.Assign) and "loss" in name and any(
                isinstance(target.target, cst.Tuple) and name in target_names(target.target) for target in node.targets):
            found.append(_UNPACKED_LOSS)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name:
            found.append(cst.BinaryOperation(node.target, _AUGMENTED.get(type(node.operator), cst.Add)(), node.value))
    return found


_AUGMENTED = {cst.DivideAssign: cst.Divide, cst.MultiplyAssign: cst.Multiply}


def _scaled(value: cst.BaseExpression) -> bool:
    """The value is a quotient or a product (`criterion(...) / N`, `(a + b) / N`, `loss * scale`):
    not a division inside its arguments (`criterion(model(x / 255), y)`)."""
    return isinstance(value, cst.BinaryOperation) and isinstance(
        value.operator, (cst.Divide, cst.Multiply, cst.FloorDivide))
