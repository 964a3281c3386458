from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.loops import Event, Iteration, Kind
from torchlint.analysis.module_attributes import first_parameter
from torchlint.analysis.names import argument, dotted_name
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule

_TRAINING_STEPS = (Kind.BACKWARD, Kind.OPTIMIZER_STEP)
# An optimizer's constructor as written (`torch.optim.AdamW(`, `optim.SGD(`, `LARS(`).
_OPTIMIZER = r"(?:[Oo]ptim\w*|Adam\w*|SGD|RMSprop|Adagrad|LARS)"


class EvalModeNotRestored(Rule):
    """
    ## What it does
    Flags `model.eval()` (or `model.train(False)`), called directly or through a validation helper
    (defined in the same file, or imported from another file of the project), inside a training loop (one that calls `backward()` or an optimizer
    `step()`), when nothing calls `model.train()` between it and the loop's next training step,
    in the same iteration or at the top of the next one. A function that runs an epoch or a
    validation pass by a flag it never reassigns (`def run_epoch(self, epoch, train=True)`, the
    evaluation under `if not train:`, the step under `if train:`) never does both in one call, and
    a call passing `train=False` runs no step. The same holds for a helper of another file: a call
    `evaluate_model(model, data, is_training=True)` of a helper that switches to eval mode only
    `if not is_training:` (or after `if is_training: return ...`) switches nothing; without the
    flag (its default is `False`) or with one the call computes, it is reported.

    Only modules that the file trains are considered: one it calls `.train()` on somewhere, or
    whose `.parameters()` it hands to an optimizer, directly or as the parameter groups a helper
    builds from the module (`groups = get_params_groups(student)`, then `AdamW(groups)`). A
    frozen teacher or an EMA copy put in eval mode is not flagged.

    ## Why is this bad?
    `eval()` switches dropout off and makes batch norm use its running statistics. If training
    resumes without `train()`, every later step trains the model in evaluation mode: no
    dropout regularisation, and batch norm statistics that stop updating. Nothing raises; the
    model just trains worse after the first validation, which is hard to notice.

    ## Example
    ```python
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)  # calls model.eval()
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
        validate(model, val_loader)
    ```
    """

    code = "TL015"
    name = "eval-mode-not-restored"
    summary = "model.eval() inside a training loop with no model.train() before the next training step"
    severity = Severity.ERROR

    def leave_Module(self, node: cst.Module) -> None:
        reported: set[int] = set()
        for iteration in self.ctx.loops.training_loops():
            events = iteration.events
            for position, event in enumerate(events):
                if event.kind is not Kind.EVAL_MODE:
                    continue
                site = event.via[0] if event.via else event.node
                module = self._module_text(iteration, event)
                if id(site) in reported or module is None or not self._is_trained(module):
                    continue
                if self._restored_before_next_step(iteration, position, module):
                    continue
                reported.add(id(site))
                helper = f" (in `{self.ctx.code_for(site.func)}`)" if event.via else ""
                self.report(
                    site,
                    f"`{module}.eval()`{helper} runs inside the training loop and nothing calls "
                    f"`{module}.train()` before the next training step: dropout and batch norm stay in "
                    f"eval mode for the rest of training; call `{module}.train()` after validating",
                    related=self._where(event),
                )

    def _where(self, event: Event) -> tuple:
        """The `eval()` itself when a helper runs it: in another file, or in this one."""
        if event.elsewhere is not None:
            return self.ctx.project.related([event.elsewhere], self.ctx.path)
        if event.via:
            return (RelatedNode(event.node, f"`eval()` called here, in `{self.ctx.code_for(event.via[-1].func)}`"),)
        return ()

    def _restored_before_next_step(self, iteration: Iteration, position: int, module: str) -> bool:
        """A `train()` of `module` lies between the eval at `position` and the next training step,
        following the loop round to the start of the next iteration when needed."""
        events = iteration.events
        loops = self.ctx.loops
        for event in [*events[position + 1:], *events[:position]]:
            if event.kind is Kind.TRAIN_MODE and self._module_text(iteration, event) == module:
                return True
            if event.kind in _TRAINING_STEPS and not loops.never_together(iteration, events[position], event):
                return False
        return True  # no training step at all in the cycle (never the case in a training loop)

    def _module_text(self, iteration: Iteration, event: Event) -> str | None:
        """The module an eval/train event switches, as the loop's own code names it: a helper's
        parameter (`def validate(net, ...)`: `net.eval()`) becomes the argument it was called with."""
        text = event.target_text
        if text is None or not event.via or event.elsewhere is not None:
            return text  # a helper of another file: its event already names the call's argument
        loops = self.ctx.loops
        scope = loops.index.scope_of_loop.get(id(iteration.owner))
        called: list[tuple[cst.Call, cst.FunctionDef]] = []
        for call in event.via:
            function = loops.resolve_call(call, scope) if scope is not None else None
            if function is None:
                return None
            called.append((call, function))
            scope = loops.index.scope_of_function[id(function)]
        for call, function in reversed(called):
            text = _as_caller_names_it(text, call, function)
            if text is None:
                return None
        return text

    def _is_trained(self, module: str) -> bool:
        """The file puts `module` in training mode or gives its parameters to an optimizer,
        also as groups a helper builds from it (`groups = get_params_groups(student)`, then
        `AdamW(groups)`)."""
        escaped = re.escape(module)
        source = self.ctx.source
        if re.search(rf"(?<![\w.]){escaped}\.train\(", source):
            return True
        if re.search(rf"{_OPTIMIZER}\(\s*{escaped}\.parameters\(", source):
            return True
        groups = re.findall(rf"^[ \t]*(\w+)\s*=\s*[\w.]+\(\s*{escaped}\s*[,)]", source, re.MULTILINE)
        return any(re.search(rf"{_OPTIMIZER}\(\s*{group}\b", source) for group in groups)


def _as_caller_names_it(text: str, call: cst.Call, function: cst.FunctionDef) -> str | None:
    """`net` inside `def validate(net)` called as `validate(model)` is `model`; names the callee
    does not receive as parameters (a global `model`, `self.model` of the same object) stay."""
    head, dot, rest = text.partition(".")
    params = [*function.params.posonly_params, *function.params.params]
    if isinstance(call.func, cst.Attribute) and params and params[0].name.value == first_parameter(function):
        if head == params[0].name.value:
            receiver = dotted_name(call.func.value)
            return None if receiver is None else f"{receiver}{dot}{rest}"
        params = params[1:]
    names = [param.name.value for param in (*params, *function.params.kwonly_params)]
    if head not in names:
        return text
    position = names.index(head) if head in [param.name.value for param in params] else len(names)
    passed = argument(call, position, head)
    written = dotted_name(passed) if passed is not None else None
    return None if written is None else f"{written}{dot}{rest}"
