from __future__ import annotations

import libcst as cst

from torchlint.analysis.grad_mode import GradState
from torchlint.analysis.loops import Loop, enclosing_loops
from torchlint.analysis.names import argument, dotted_name, is_constant_true
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


class _Frame:
    """What one function body has done so far: the models put in eval mode, grad switched off."""

    def __init__(self) -> None:
        # Model expression as written -> ids of the loops the `.eval()` call sits in.
        self.evaluated: dict[str, frozenset[int]] = {}
        self.grad_off = False
        # Parameters frozen here (`p.requires_grad = False`, `requires_grad_(False)`): with no
        # leaf requiring grad, autograd records nothing anyway.
        self.frozen = False


class EvalWithoutNoGrad(Rule):
    """
    ## What it does
    Flags a call of a model inside a loop that runs after `model.eval()` when no
    `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)` is in effect
    (as a `with` block, a decorator of the function, or a `set_grad_enabled(False)` statement).
    Loops that want gradients (they call `backward()`, `torch.autograd.grad`, `requires_grad_()`:
    saliency maps, adversarial examples) are left alone, and so are functions that freeze the
    parameters (`p.requires_grad = False`), where autograd records nothing anyway.

    ## Why is this bad?
    `model.eval()` only switches dropout and batch norm to inference behaviour; it does not stop
    autograd. Every forward pass still records its graph and keeps the activations it needs for a
    backward that never comes: evaluation uses several times the memory and runs slower, and large
    batches that would fit run out of memory.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        preds = model(x).argmax(-1)
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.inference_mode():
        for x, y in val_loader:
            preds = model(x).argmax(-1)
    ```
    """

    code = "TL007"
    name = "eval-without-no-grad"
    summary = "Model called in an evaluation loop without no_grad/inference_mode: autograd records a graph"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._frames = [_Frame()]
        self._reported: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.append(_Frame())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        frame = self._frames[-1]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("eval", "train"):
                self._mode_switch(node, method, func.value, frame)
                return
            if method == "set_grad_enabled":
                self._grad_switch(node, frame)
                return
            if method == "requires_grad_" and node.args and _is_false(node.args[0].value):
                frame.frozen = True
                return
        elif isinstance(func, cst.Name) and func.value == "set_grad_enabled":
            self._grad_switch(node, frame)
            return
        if not frame.evaluated or frame.frozen or any(f.grad_off for f in self._frames):
            return
        written = dotted_name(func)
        if written is None or written not in frame.evaluated:
            return
        loop = self._loop_after_eval(frame.evaluated[written])
        if loop is None or id(loop) in self._reported:
            return
        if self.ctx.grad_mode.state() is not GradState.DEFAULT or self.ctx.loops.iteration(loop).needs_grad:
            return
        self._reported.add(id(loop))
        model = self.ctx.code_for(func)
        self.report(
            node,
            f"`{model}(...)` runs in a loop after `{model}.eval()` with autograd still recording; wrap the "
            "loop in `with torch.inference_mode():` (or `torch.no_grad()`)",
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        if _is_false(node.value) and any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in node.targets
        ):
            self._frames[-1].frozen = True

    def _mode_switch(self, call: cst.Call, method: str, receiver: cst.BaseExpression, frame: _Frame) -> None:
        target = dotted_name(receiver)
        parent = self.ctx.parent
        if target is None and isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)  # `net = Net().eval()`
        if target is None:
            return
        mode = argument(call, 0, "mode")
        entering_eval = (method == "eval" and not call.args) or (
            method == "train" and isinstance(mode, cst.Name) and mode.value == "False"
        )
        if entering_eval:
            frame.evaluated[target] = frozenset(id(loop) for loop in enclosing_loops(self.ctx.ancestors))
        elif method == "train":
            frame.evaluated.pop(target, None)  # train(), train(True), or train(flag): not known to be eval

    def _grad_switch(self, call: cst.Call, frame: _Frame) -> None:
        if not isinstance(self.ctx.parent, cst.Expr):
            return  # a `with` item or decorator: the grad-mode analysis reads those
        mode = argument(call, 0, "mode")
        frame.grad_off = not is_constant_true(mode)  # `set_grad_enabled(flag)`: maybe off, stay quiet

    def _loop_after_eval(self, eval_loops: frozenset[int]) -> Loop | None:
        """The outermost loop around the call that the `.eval()` call is not inside, else the innermost."""
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops:
            return None
        for loop in reversed(loops):
            if id(loop) not in eval_loops:
                return loop
        return loops[0]
