from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.layouts import int_value
from torchlint.analysis.loops import Event, Iteration, Kind
from torchlint.analysis.names import argument, dotted_name
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_SCHEDULERS = "torch.optim.lr_scheduler."
# Each epoch-based schedule: the argument that counts its period, by position and keyword.
_PERIODS = {
    "StepLR": (1, "step_size"),
    "MultiStepLR": (1, "milestones"),
    "CosineAnnealingLR": (1, "T_max"),
    "ExponentialLR": (1, "gamma"),
}
# A period this small, written as a number, is a number of epochs: a per-step schedule of a
# real training run counts thousands of steps.
_MOST_EPOCHS = 500
# An ExponentialLR factor this far below 1 would erase the learning rate within a few hundred steps.
_EPOCH_GAMMA = 0.99
_EPOCH_WORDS = re.compile(r"epoch", re.IGNORECASE)
_STEP_WORDS = re.compile(r"step|iter|batch|len\(|total|update", re.IGNORECASE)
# Wrappers of the iterable of a batch loop: `enumerate(loader)`, `tqdm(loader)`.
_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "zip", "iter"})


class EpochScheduleSteppedPerBatch(Rule):
    """
    ## What it does
    Flags `scheduler.step()` of an epoch-based learning-rate schedule called in the batch loop,
    once per optimizer step: a `StepLR`, `MultiStepLR` or `CosineAnnealingLR` whose period is a
    number of epochs (a name that says epochs, such as `args.epochs`, or a literal of at most 500),
    or an `ExponentialLR` whose factor is at most 0.99. The batch loop is a `for` loop over data
    (a loader, `enumerate(loader)`, `tqdm(loader)`), not over `range(...)`, that steps the
    optimizer each iteration; the scheduler is the one the file creates under that name.

    Not flagged: per-step schedules (`OneCycleLR`, `CyclicLR`, `LambdaLR` warm-ups, a period that
    says steps, iterations or batches, such as `len(loader) * epochs` or `total_steps`), a step
    under a condition the optimizer step does not share (`if i == len(loader) - 1:`), a step with
    arguments (`ReduceLROnPlateau`), and loops over `range(...)` (step-based training).

    ## Why is this bad?
    The schedule's period counts `step()` calls. Stepped every batch, a `StepLR(step_size=30)`
    decays after 30 batches instead of 30 epochs, and a cosine schedule over `T_max=epochs`
    restarts every `epochs` batches: the learning rate decays `len(loader)` times too fast, and
    training stalls early with a learning rate near zero.

    ## Example
    ```python
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            scheduler.step()
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
    (or keep the per-batch step and give the period in steps: `step_size=30 * len(loader)`).
    """

    code = "TL017"
    name = "epoch-schedule-stepped-per-batch"
    summary = "An epoch-based LR schedule stepped every batch decays len(loader) times too fast"
    severity = Severity.WARNING

    def leave_Module(self, node: cst.Module) -> None:
        for iteration in self.ctx.loops.training_loops():
            if not self._batch_loop(iteration):
                continue
            for event in iteration.events:
                if event.kind is Kind.SCHEDULER_STEP and not event.has_args and not event.loops:
                    self._check_step(event, iteration)

    def _check_step(self, event: Event, iteration: Iteration) -> None:
        optimizer_steps = [e for e in iteration.of_kind(Kind.OPTIMIZER_STEP) if not e.loops]
        if not any(_conditions(step) >= _conditions(event) for step in optimizer_steps):
            return
        creation = self.ctx.loops.creation(event.target, iteration.owner)
        schedule = self.ctx.callee(creation) if creation is not None else None
        if schedule is None or not schedule.startswith(_SCHEDULERS):
            return
        kind = schedule.removeprefix(_SCHEDULERS)
        period = _PERIODS.get(kind)
        value = argument(creation, *period) if period is not None else None
        if value is None or not self._counts_epochs(kind, value):
            return
        scheduler = self.ctx.code_for(event.target) if event.target is not None else "scheduler"
        written = self.ctx.code_for(value)
        self.report(
            event.node,
            f"`{scheduler}.step()` runs every batch, but its `{kind}` counts epochs (`{period[1]}={written}`): "
            "the learning rate decays `len(loader)` times too fast; step it once per epoch, after the batch "
            "loop, or give the period in steps",
        )

    def _batch_loop(self, iteration: Iteration) -> bool:
        """A `for` loop over data that steps the optimizer in each of its iterations."""
        loop = iteration.owner
        if not isinstance(loop, cst.For) or not iteration.steps_each_iteration:
            return False
        iterable = loop.iter
        while isinstance(iterable, cst.Call) and self._wrapper(iterable) and iterable.args:
            iterable = iterable.args[0].value
        return not (isinstance(iterable, cst.Call) and dotted_name(iterable.func) in ("range", "trange"))

    def _wrapper(self, call: cst.Call) -> bool:
        return (self.ctx.callee(call) or dotted_name(call.func) or "") in _WRAPPERS

    @staticmethod
    def _counts_epochs(kind: str, value: cst.BaseExpression) -> bool:
        if kind == "ExponentialLR":
            gamma = _float(value)
            return gamma is not None and gamma <= _EPOCH_GAMMA
        elements = value.elements if isinstance(value, (cst.List, cst.Tuple)) else None
        numbers = [int_value(e.value) for e in elements] if elements else [int_value(value)]
        if all(number is not None for number in numbers):
            return 0 < max(numbers) <= _MOST_EPOCHS
        text = cst.Module([]).code_for_node(value)
        return _EPOCH_WORDS.search(text) is not None and _STEP_WORDS.search(text) is None


def _conditions(event: Event) -> set[tuple[int, int]]:
    return {(id(condition.node), condition.branch) for condition in event.conditions}


def _float(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, (cst.Float, cst.Integer)):
        try:
            return float(expr.value)
        except ValueError:
            return None
    return None
