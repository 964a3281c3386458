from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import enclosing_loops, name_hint
from torchlint.analysis.names import method_name
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule

# Calls whose result no longer carries the autograd graph.
_DETACHING_METHODS = frozenset({"item", "detach", "tolist", "numpy"})
_DETACHING_FUNCTIONS = frozenset({"float", "int", "round", "abs"})
_LOSS_WORDS = ("loss", "criterion", "cross_entropy", "kl_div")
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


class LossAccumulatedWithGraph(Rule):
    """
    ## What it does
    Flags `total += loss` (or `total = total + loss`) inside a loop that calls `.backward()` or an
    optimizer `step()`, when `loss` is the tensor the loop back-propagates (or the result of a loss
    function) and `total` lives across iterations. Accumulating `loss.item()`, `loss.detach()` or
    `float(loss)` is fine, and so is summing loss terms within one iteration.

    ## Why is this bad?
    `loss` carries its autograd graph, and so does `total` after the addition: every iteration's
    graph stays reachable from `total` until it is reset, so memory grows with each step (the
    first entry of PyTorch's FAQ on memory). The logged value does not need the graph.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
        total_loss += loss.detach()  # or loss.item(), which synchronises every step
    ```

    ## Fix safety
    The fix adds `.detach()` and is unsafe: it changes behaviour if the accumulated value is
    back-propagated on purpose later.
    """

    code = "TL003"
    name = "loss-accumulated-with-graph"
    summary = "Loss accumulated across iterations with its autograd graph: add .detach() or .item()"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._check(node, node.target.value, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Add)
            and isinstance(value.left, cst.Name)
            and value.left.value == node.targets[0].target.value
        ):
            self._check(node, value.left.value, value.right)

    def _check(self, node: cst.CSTNode, total: str, added: cst.BaseExpression) -> None:
        leaves = _name_leaves(added)
        if not leaves:
            return
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops or not self.ctx.loops.is_training_loop(loops[0]):
            return
        ctx = self.ctx
        # Reset earlier in this same iteration: a sum of terms within one step, not across steps.
        if ctx.values.value_of(total) is not None or ctx.grad_mode.is_disabled():
            return
        subjects = ctx.loops.iteration(loops[0]).backward_subjects()
        if total in subjects:
            return  # deliberate graph accumulation: the sum itself is back-propagated
        for leaf in leaves:
            value = ctx.values.value_of(leaf.value)
            if value is not None and _detached(value):
                continue
            if leaf.value in subjects or (value is not None and _is_loss(value)):
                self.report(
                    node,
                    f"`{total}` accumulates `{leaf.value}` with its autograd graph across iterations, "
                    f"keeping every step's graph alive; add `{leaf.value}.detach()` (or `.item()`)",
                    fix=FixSpec(f"Use `{leaf.value}.detach()`", ((leaf, f"{leaf.value}.detach()"),), Applicability.UNSAFE),
                )
                return


def _name_leaves(expr: cst.BaseExpression) -> list[cst.Name]:
    """The plain names an arithmetic expression adds up: `loss` in `loss * x.size(0)`."""
    if isinstance(expr, cst.Name):
        return [expr]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return _name_leaves(expr.left) + _name_leaves(expr.right)
    return []


def _detached(value: cst.CSTNode) -> bool:
    if isinstance(value, cst.Call):
        if method_name(value) in _DETACHING_METHODS:
            return True
        return isinstance(value.func, cst.Name) and value.func.value in _DETACHING_FUNCTIONS
    if isinstance(value, cst.Attribute):
        return value.attr.value == "data"
    return isinstance(value, (cst.Integer, cst.Float, cst.Param))


def _is_loss(value: cst.CSTNode) -> bool:
    """`criterion(out, y)`, `F.cross_entropy(...)`, `loss_fn(...)`, `outputs.loss`."""
    if isinstance(value, cst.Attribute):
        return value.attr.value == "loss"
    if not isinstance(value, cst.Call):
        return False
    hint = name_hint(value.func)
    return any(word in hint for word in _LOSS_WORDS)
