from __future__ import annotations

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.loops import Condition, Event, Iteration, Kind
from torchlint.analysis.module_attributes import string_value
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import child_nodes, nodes_in_order

# The calls that make a `warnings.catch_warnings()` block ignore warnings.
_IGNORING = frozenset({"warnings.simplefilter", "warnings.filterwarnings"})


class SchedulerBeforeOptimizerStep(Rule):
    """
    ## What it does
    Flags `scheduler.step()` that runs before `optimizer.step()` in one iteration of a training
    loop (or one call of a training-step function): the scheduler is stepped first, then an
    optimizer step follows, with no optimizer step before it. This includes the old pattern of
    stepping the scheduler at the start of each epoch, before the batch loop. A scheduler
    stepped under a condition counts when an optimizer step follows whenever it runs and the
    condition holds the first time it is tested: a warm-up guard (`if epoch <= warm_epochs:`),
    a flag that does not change over the loop, or a training phase (`else: sched.step();
    train_one_epoch(...)`). `if epoch > 0:` and throttles (`if step % 100 == 0:`) do not: they
    skip the first iteration. A step under `with warnings.catch_warnings():` that ignores
    warnings is left alone: the code silences PyTorch's own warning about this order on purpose
    (it offsets the schedule by hand, through `last_epoch`).

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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._warnings_silenced: set[int] = set()  # nodes under `with warnings.catch_warnings():` that ignore them

    def visit_With(self, node: cst.With) -> None:
        if any(self.ctx.callee(item.item) == "warnings.catch_warnings" for item in node.items
               if isinstance(item.item, cst.Call)):
            inside = list(nodes_in_order(node.body))
            if any(isinstance(call, cst.Call) and self.ctx.callee(call) in _IGNORING
                   and call.args and string_value(call.args[0].value) == "ignore" for call in inside):
                self._warnings_silenced.update(id(inner) for inner in inside)

    def leave_Module(self, node: cst.Module) -> None:
        for sequence in self.ctx.loops.step_sequences():
            events = sequence.events
            loop_names = _loop_names(sequence)
            for position, event in enumerate(events):
                # A step inside an inner loop is judged there. `step(metric)` is ReduceLROnPlateau.
                if event.kind is not Kind.SCHEDULER_STEP or event.has_args or event.loops:
                    continue
                if id(event.node) in self._warnings_silenced:
                    continue  # torch's warning about this order silenced on purpose: an offset the code chose
                if any(earlier.kind is Kind.OPTIMIZER_STEP and not earlier.exclusive_with(event)
                       for earlier in events[:position]):
                    continue
                if any(self._steps_after(event, later, loop_names) for later in events[position + 1:]):
                    scheduler = self.ctx.code_for(event.target) if event.target is not None else "scheduler"
                    self.report(
                        event.node,
                        f"`{scheduler}.step()` runs before `optimizer.step()`, which skips the first "
                        "learning-rate value; step the scheduler after the optimizer",
                    )

    @staticmethod
    def _steps_after(scheduler: Event, later: Event, loop_names: set[str]) -> bool:
        """`later` is an optimizer step that follows the scheduler's in the iteration where the
        scheduler first steps: after an unconditional scheduler step, any optimizer step that
        may run; after a conditional one, a step that runs whenever it does, when the conditions
        it adds hold the first time they are tested (`if epoch <= warmup:`, `if args.warm:`)
        rather than only later (`if epoch > 0:`, `if step % 100 == 0:`)."""
        if later.kind is not Kind.OPTIMIZER_STEP or later.exclusive_with(scheduler):
            return False
        shared = {(id(condition.node), condition.branch) for condition in later.conditions}
        if not shared <= {(id(condition.node), condition.branch) for condition in scheduler.conditions}:
            return not scheduler.conditions
        return all(
            _true_the_first_time(condition, loop_names)
            for condition in scheduler.conditions if (id(condition.node), condition.branch) not in shared
        )


_WARM_UP_BOUNDS = (cst.LessThan, cst.LessThanEqual)


def _true_the_first_time(condition: Condition, loop_names: set[str]) -> bool:
    """An `if` body whose test does not change over the loop's iterations, or a warm-up guard
    on the loop's counter (`epoch < warm_epochs`). Not an `else`, a handler or a case."""
    if not isinstance(condition.node, cst.If) or condition.branch != 0:
        return False
    test = condition.node.test
    if not loop_names & _names_in(test):
        return True
    return (
        isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
        and test.left.value in loop_names and isinstance(test.comparisons[0].operator, _WARM_UP_BOUNDS)
    )


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    pending = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        pending.extend(child_nodes(node))
    return found


def _loop_names(sequence: Iteration) -> set[str]:
    """The names a `for` loop binds each iteration (its counter); none for a function's call."""
    owner = sequence.owner
    return set(target_names(owner.target)) if isinstance(owner, cst.For) else set()
