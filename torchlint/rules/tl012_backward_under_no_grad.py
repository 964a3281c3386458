from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import method_name, method_receiver
from torchlint.analysis.tensors import PARAMETER_CLASSES, requires_grad_true
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

# Reductions that keep "computed without grad" (`loss.mean().backward()`).
_PASS_THROUGH = frozenset({"sum", "mean", "squeeze", "float", "double", "to", "cuda", "clone"})


def _computation(expr: cst.BaseExpression) -> bool:
    """An expression that computes a new value (not a plain alias or a literal)."""
    return isinstance(expr, (cst.Call, cst.BinaryOperation, cst.UnaryOperation))


class BackwardUnderNoGrad(Rule):
    """
    ## What it does
    Flags `.backward()` on a value that was computed inside `with torch.no_grad():`,
    `with torch.inference_mode():` (or `set_grad_enabled(False)`, or a function decorated with
    `@torch.no_grad()`), including a backward called inside the block on a value computed there.

    ## Why is this bad?
    Nothing computed with grad mode off is recorded: the value has no `grad_fn` and backward
    raises `RuntimeError: element 0 of tensors does not require grad and does not have a
    grad_fn` (or, under inference mode, the value cannot be saved for backward at all). Often the
    loss computation was moved into an evaluation block by mistake.

    ## Example
    ```python
    with torch.no_grad():
        loss = criterion(model(x), y)
    loss.backward()
    ```

    ## Use instead
    ```python
    loss = criterion(model(x), y)
    loss.backward()
    ```
    """

    code = "TL012"
    name = "backward-under-no-grad"
    summary = "`.backward()` on a value computed under `torch.no_grad()` raises: it has no `grad_fn`"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._computed_without_grad: set[int] = set()
        # Names whose `requires_grad` was switched on by hand after the computation (a leaf).
        self._made_leaf: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if _computation(value) and self.ctx.grad_mode.is_disabled() and not self._requires_grad(value):
            self._computed_without_grad.add(id(value))
        for target in node.targets:
            written = target.target
            if isinstance(written, cst.Attribute) and written.attr.value == "requires_grad" and isinstance(written.value, cst.Name):
                self._made_leaf.add(written.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method == "requires_grad_":
            receiver = method_receiver(node)
            if isinstance(receiver, cst.Name):
                self._made_leaf.add(receiver.value)
            return
        if method != "backward":
            return
        source = method_receiver(node)
        while isinstance(source, cst.Call) and method_name(source) in _PASS_THROUGH:
            source = method_receiver(source)
        if source is None:
            return
        if isinstance(source, cst.Name):
            if source.value in self._made_leaf:
                return
            value = self.ctx.values.value_of(source.value)
            if value is None or id(value) not in self._computed_without_grad:
                return
            where = f"`{source.value}` was computed"
        elif _computation(source) and self.ctx.grad_mode.is_disabled() and not self._requires_grad(source):
            where = "the value is computed"
        else:
            return
        if self.ctx.guards.in_version_gate(node):
            return
        self.report(
            node,
            f"`.backward()` raises: {where} under `torch.no_grad()`/`inference_mode()` and has no "
            "`grad_fn`; compute it outside the no-grad block",
        )

    def _requires_grad(self, value: cst.BaseExpression) -> bool:
        """Values that are leaves requiring grad even when created with grad mode off."""
        while isinstance(value, cst.Call):
            if requires_grad_true(value) or method_name(value) == "requires_grad_":
                return True
            if self.ctx.callee(value) in PARAMETER_CLASSES:
                return True
            value = method_receiver(value)
        return False
