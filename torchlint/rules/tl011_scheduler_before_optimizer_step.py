from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import Kind
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class SchedulerBeforeOptimizerStep(Rule):
    """
    ## What it does
    Flags `scheduler.step()` that runs before `optimizer.step()` in one iteration of a training
    loop (or one call of a training-step function): the scheduler is stepped first, then an
    optimizer step follows, with no optimizer step before it. This includes the old pattern of
    stepping the scheduler at the start of each epoch, before the batch loop.

    ## Why is this bad?
    Since PyTorch 1.1 the scheduler must be stepped after the optimizer. Stepped first, it skips
    the first value of the learning-rate schedule (the warm-up starts one step late, a step
    schedule decays one epoch early) and PyTorch warns "Detected call of `lr_scheduler.step()`
    before `optimizer.step()`".

    ## Example
    ```python
    for epoch in range(epochs):
        scheduler.step()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        scheduler.step()
    ```
    """

    code = "TL011"
    name = "scheduler-before-optimizer-step"
    summary = "scheduler.step() before optimizer.step(): the first learning-rate value is skipped"
    severity = Severity.WARNING

    def leave_Module(self, node: cst.Module) -> None:
        for sequence in self.ctx.loops.step_sequences():
            events = sequence.events
            for position, event in enumerate(events):
                # Only a scheduler stepped unconditionally at this level: `if epoch > 0:` or a
                # step inside an inner loop is judged there. `step(metric)` is ReduceLROnPlateau.
                if event.kind is not Kind.SCHEDULER_STEP or event.has_args or event.conditions or event.loops:
                    continue
                if any(earlier.kind is Kind.OPTIMIZER_STEP for earlier in events[:position]):
                    continue
                if any(
                    later.kind is Kind.OPTIMIZER_STEP and not later.exclusive_with(event)
                    for later in events[position + 1:]
                ):
                    scheduler = self.ctx.code_for(event.target) if event.target is not None else "scheduler"
                    self.report(
                        event.node,
                        f"`{scheduler}.step()` runs before `optimizer.step()`, which skips the first "
                        "learning-rate value; step the scheduler after the optimizer",
                    )
