from __future__ import annotations

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.literals import is_number
from torchlint.analysis.names import argument, is_constant_false, keyword_arg
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Adam-family optimizers whose `weight_decay` is an L2 term added to the gradient, by qualified
# name, with the position of `weight_decay` among their parameters (after `params`).
_COUPLED_OPTIMIZERS = {
    f"torch.optim.{module}{name}": name
    for name in ("Adam", "NAdam", "RAdam")
    for module in ("", f"{name.lower()}.")
}
_WEIGHT_DECAY_POSITION = 4


class AdamCoupledWeightDecay(Rule):
    """
    ## What it does
    Flags `torch.optim.Adam`, `NAdam` and `RAdam` created with a nonzero constant `weight_decay`
    and without `decoupled_weight_decay=True`. A `weight_decay` of 0, or one read from a variable
    whose value is not known here (a config, a command-line argument), is not flagged, nor is
    test code (a test module, a module of a `test/`, `tests/`, `testing/` or `test_utils/`
    folder): a test trains to check what the code does, not how well the weights generalise.

    ## Why is this bad?
    These optimizers implement `weight_decay` as an L2 penalty added to the gradient, which Adam
    then divides by its running estimate of the gradient's scale: parameters with large
    gradients are barely decayed and rarely-updated ones are decayed hard. That is not the weight
    decay of SGD that most authors mean, and it regularises worse (Loshchilov and Hutter,
    "Decoupled Weight Decay Regularization", 2019). `torch.optim.AdamW` (or
    `decoupled_weight_decay=True`) shrinks every weight by `lr * weight_decay` per step instead.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-2)
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-2)
    ```

    ## Fix safety
    The fix is unsafe: it changes what the optimizer computes, on purpose. `Adam` becomes
    `AdamW` (same parameters, same order); `NAdam` and `RAdam` get `decoupled_weight_decay=True`.
    The best `weight_decay` value differs between the two schemes (decoupled decay is scaled by
    the learning rate, so typical values are 10 to 100 times larger), so retune it after the fix.
    A bare `Adam` name is fixed only when `AdamW` is imported too.

    Bug left in place: no. Computation changed: yes, by design (the regularisation changes).
    """

    code = "TL016"
    name = "adam-coupled-weight-decay"
    summary = "Adam with weight_decay adds L2 to the gradient, not decoupled weight decay: use AdamW"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        optimizer = _COUPLED_OPTIMIZERS.get(self.ctx.callee(node) or "")
        if optimizer is None or self.ctx.serves_tests:
            return  # a test trains to check mechanics, not how well the weights generalise
        decay = argument(node, _WEIGHT_DECAY_POSITION, "weight_decay")
        if decay is None or not _nonzero_constant(self.ctx.kinds.resolve(decay)):
            return
        decoupled = keyword_arg(node, "decoupled_weight_decay")
        if decoupled is not None and not is_constant_false(decoupled.value):
            return  # decoupled, or decided by a variable
        advice = "`torch.optim.AdamW`" if optimizer == "Adam" else "`decoupled_weight_decay=True`"
        self.report(
            node,
            f"`{optimizer}(weight_decay={self.ctx.code_for(decay)})` adds an L2 term to the gradient that "
            f"Adam's adaptive scaling then distorts: it is not decoupled weight decay; use {advice}",
            fix=self._fix(node, optimizer, decoupled),
        )

    def _fix(self, node: cst.Call, optimizer: str, decoupled: cst.Arg | None) -> FixSpec | None:
        if decoupled is not None:
            return None  # `decoupled_weight_decay=False` written out: the author chose it
        if optimizer != "Adam":
            fixed = with_arguments(node, last=[keyword("decoupled_weight_decay", "True")])
            return FixSpec("Add `decoupled_weight_decay=True`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
        func = node.func
        if isinstance(func, cst.Attribute):
            return FixSpec("Use `AdamW`", ((func.attr, "AdamW"),), Applicability.UNSAFE)
        adamw_names = self.ctx.imports.local_names_for("torch.optim.AdamW")
        if not adamw_names:
            return None
        return FixSpec(f"Use `{adamw_names[0]}`", ((func, adamw_names[0]),), Applicability.UNSAFE)


def _nonzero_constant(expr: cst.BaseExpression) -> bool:
    if not is_number(expr):
        return False
    literal = expr.expression if isinstance(expr, cst.UnaryOperation) else expr
    return literal.evaluated_value != 0

