from __future__ import annotations

import libcst as cst

from torchlint.analysis.grad_mode import GradState
from torchlint.analysis.names import method_name, method_receiver
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_IN_PLACE_UPDATES = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_"})
_AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})


def _grad_of(expr: cst.BaseExpression, target: str, ctx, depth: int = 0) -> bool:
    """`expr` reads `<target>.grad` (directly, or through a local name assigned from it)."""
    if depth > 12:
        return False
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "grad" and ctx.code_for(expr.value) == target:
            return True
        return _grad_of(expr.value, target, ctx, depth + 1)
    if isinstance(expr, cst.Name):
        resolved = ctx.values.resolve(expr)
        return resolved is not expr and depth < 4 and _grad_of(resolved, target, ctx, depth + 4)
    if isinstance(expr, cst.BinaryOperation):
        return _grad_of(expr.left, target, ctx, depth + 1) or _grad_of(expr.right, target, ctx, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return _grad_of(expr.expression, target, ctx, depth + 1)
    if isinstance(expr, cst.Call):
        receiver = method_receiver(expr)
        if receiver is not None and _grad_of(receiver, target, ctx, depth + 1):
            return True
        return any(_grad_of(arg.value, target, ctx, depth + 1) for arg in expr.args)
    return False


def _updated_tensor(target: cst.BaseExpression) -> bool:
    """A tensor that can be a grad-requiring leaf: not `p.data` nor `p.grad` itself."""
    if isinstance(target, cst.Attribute):
        return target.attr.value not in ("data", "grad")
    return isinstance(target, (cst.Name, cst.Subscript))


class ManualUpdateOutsideNoGrad(Rule):
    """
    ## What it does
    Flags an in-place update of a tensor from its own gradient (`w -= lr * w.grad`,
    `p.add_(p.grad, alpha=-lr)`) that runs with grad mode on, after a `.backward()` in the same
    function or script, outside `torch.no_grad()`.

    ## Why is this bad?
    `w` is a leaf that requires grad; autograd refuses in-place changes to it while recording:
    `RuntimeError: a leaf Variable that requires grad is being used in an in-place operation`.
    (Writing `w = w - lr * w.grad` instead silently turns `w` into a non-leaf whose `.grad` stays
    None.)

    ## Example
    ```python
    loss.backward()
    w -= lr * w.grad
    b.sub_(lr * b.grad)
    ```

    ## Use instead
    ```python
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b.sub_(lr * b.grad)
    ```
    """

    code = "TL004"
    name = "manual-update-outside-no-grad"
    summary = "In-place update of a parameter from its `.grad` while autograd records: wrap it in `torch.no_grad()`"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Per scope (module, then each function): has a `.backward()` been seen so far?
        self._backward_seen = [False]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._backward_seen.append(False)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._backward_seen.pop()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, (cst.SubtractAssign, cst.AddAssign)):
            return
        if not self._backward_seen[-1] or not _updated_tensor(node.target):
            return
        target = self.ctx.code_for(node.target)
        if _grad_of(node.value, target, self.ctx) and self._recording():
            self._report(node, target)

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method == "backward" or (method is None and self.ctx.callee(node) in _AUTOGRAD_BACKWARD):
            self._backward_seen[-1] = True
            return
        if method not in _IN_PLACE_UPDATES or not self._backward_seen[-1]:
            return
        receiver = method_receiver(node)
        if receiver is None or not _updated_tensor(receiver):
            return
        target = self.ctx.code_for(receiver)
        if any(_grad_of(arg.value, target, self.ctx) for arg in node.args) and self._recording():
            self._report(node, target)

    def _recording(self) -> bool:
        return self.ctx.grad_mode.state() in (GradState.DEFAULT, GradState.ENABLED)

    def _report(self, node: cst.CSTNode, target: str) -> None:
        if self.ctx.guards.in_version_gate(node):
            return
        self.report(
            node,
            f"in-place update of `{target}` from `{target}.grad` while autograd records raises on a leaf "
            "that requires grad; wrap the update in `with torch.no_grad():`",
        )
