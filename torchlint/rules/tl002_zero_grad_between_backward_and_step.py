from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import Event, Iteration, Kind
from torchlint.context import RelatedNode
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class ZeroGradBetweenBackwardAndStep(Rule):
    """
    ## What it does
    Flags `optimizer.zero_grad()` that runs after `backward()` and before `optimizer.step()` of the
    same optimizer in one iteration of a training loop (or one call of a training-step function),
    with no other `backward()` (or gradients written by hand, `p.grad = g`) in between.

    ## Why is this bad?
    `zero_grad()` throws away the gradients that `backward()` just computed, so `step()` sees
    zeros (or `None`) and the parameters do not move, or only move by weight decay and momentum.
    The loss stays flat and nothing raises an error.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()
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
    """

    code = "TL002"
    name = "zero-grad-between-backward-and-step"
    summary = "zero_grad() between backward() and step() discards the gradients before they are used"
    severity = Severity.ERROR

    def leave_Module(self, node: cst.Module) -> None:
        for sequence in self.ctx.loops.step_sequences():
            for backward, zero, step in self._discarding_zero_grads(sequence):
                optimizer = self.ctx.code_for(zero.target) if zero.target is not None else "optimizer"
                self.report(
                    zero.node,
                    f"`{optimizer}.zero_grad()` runs after `backward()` and before `{optimizer}.step()`, so "
                    "the step sees no gradients; move it before the forward pass or after `step()`",
                    related=(
                        RelatedNode(backward.node, "the gradients are computed here"),
                        RelatedNode(step.node, "the step that should use them runs here"),
                    ),
                )

    @staticmethod
    def _discarding_zero_grads(sequence: Iteration) -> list[tuple[Event, Event, Event]]:
        """(the backward, the zero_grad that discards its gradients, the step) per finding."""
        found = []
        events = sequence.events
        for position, step in enumerate(events):
            if step.kind is not Kind.OPTIMIZER_STEP or step.target_text is None:
                continue
            # The last event before the step that sets or clears this optimizer's gradients.
            for earlier in range(position - 1, -1, -1):
                event = events[earlier]
                if event.kind in (Kind.BACKWARD, Kind.GRAD_SET) and not event.exclusive_with(step):
                    break  # gradients computed (or written by hand) after any earlier zero_grad
                if event.kind is not Kind.ZERO_GRAD or event.target_text != step.target_text:
                    continue
                # A zero_grad under a condition the step is not under (`if overflow: zero_grad();
                # continue`) may skip the step: stay quiet.
                if event.exclusive_with(step) or not set(event.conditions) <= set(step.conditions):
                    break
                backward = next(
                    (
                        before for before in reversed(events[:earlier])
                        if before.kind is Kind.BACKWARD and not before.exclusive_with(event)
                    ),
                    None,
                )
                if backward is not None:
                    found.append((backward, event, step))
                break
        return found
