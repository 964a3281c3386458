from __future__ import annotations

from functools import cached_property

import libcst as cst

from torchlint.analysis.literals import is_literal_one, is_number, needs_parentheses
from torchlint.analysis.torch_api import (
    EXP_FUNCTIONS, LOG_FUNCTIONS, precision_severity, torch_module_name, unary_operand,
)
from torchlint.analysis.whole_numbers import rounded_to_whole
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule


class ManualLog1p(Rule):
    """
    ## What it does
    Flags `torch.log(1 + x)`, `torch.log(x + 1)`, `torch.log(1 - x)` (and `1. - x`) and the
    method forms `(1 + x).log()`, `(1 - x).log()`.

    Not reported where `x` holds whole numbers (a node degree, a count, `torch.arange(n)`,
    `x.long()`, `torch.bincount`, `argmax`, the `.sum()` of a mask, the counts that
    `torch.unique_consecutive(..., return_counts=True)` returns), also converted to float, laid
    out anew (`einops.rearrange`), taken in absolute value, collected in a list or returned by a
    helper of the file: `1 + x` is then exact and `log1p` gains nothing. Nor is a result rounded
    to a whole number, at once or after other terms are added (`(T - 1 - torch.log(a * x +
    1)).round()`, a spike time): the error, a unit in the last place of 1, cannot change it.
    Nor is `x` computed in float64 (`torch.linspace(..., dtype=torch.float64)`, also through a
    helper of the file, one chosen through a name, `schedule_fn = linear_betas if ... else
    cosine_betas`, or the branches of an `if`, and scaled by 0-dim values): a diffusion schedule
    made so on purpose keeps, down to `x` of about 1e-8, more accuracy than the float32 it is
    stored in.

    ## Why is this bad?
    For `x` near 0, `1 + x` (or `1 - x`) rounds to 1 before the log is taken: in float32, `torch.log(1 + x)` is
    0 for `|x| < 6e-8` and inaccurate well beyond that. `torch.log1p(x)` computes the same value
    accurately. For `log(1 + exp(x))` use `F.softplus(x)`, which also avoids the overflow of `exp`.
    Away from 0 both agree, and most code never sees such small `x`: a hint (shown under
    `show-hints = true` or `--show-hints`, and in the editor). Where the file also calls `expm1`,
    its author works with values near 0 and `log(1 + x)` loses what the inverse keeps: a note,
    which fails a run only under `fail-on = "note"`. So is `log(1 + exp(x))` everywhere: `exp`
    overflows to `inf` for `x` above 88 in float32.

    ## Example
    ```python
    penalty = torch.log(1 + ratio)
    ```

    ## Use instead
    ```python
    penalty = torch.log1p(ratio)
    ```

    ## Fix safety
    The fix is safe: `torch.log1p(x)` (`torch.log1p(-x)` for `log(1 - x)`) is the same function,
    computed more accurately; it never changes the result by more than rounding. No fix is
    offered for `log(1 + exp(x))`, whose better form (`softplus`) differs in how it saturates.

    Bug left in place: no. Computation changed: only in the low-order bits, towards the exact
    value.
    """

    code = "TL207"
    name = "manual-log1p"
    summary = "log(1 + x) loses precision near 0; use torch.log1p"
    severity = Severity.NOTE
    fix_applicability = Applicability.SAFE

    @cached_property
    def _precision(self) -> tuple[Severity, str]:
        """Asked at the first finding only: most files have none."""
        return precision_severity(self.ctx, "expm1")

    def visit_Call(self, node: cst.Call) -> None:
        logged = unary_operand(self.ctx, node, LOG_FUNCTIONS, "log")
        if not isinstance(logged, cst.BinaryOperation) or not isinstance(logged.operator, (cst.Add, cst.Subtract)):
            return
        negated = isinstance(logged.operator, cst.Subtract)
        if is_literal_one(logged.left):
            operand = logged.right
        elif is_literal_one(logged.right) and not negated:
            operand = logged.left
        else:
            return
        if is_number(operand) or self.ctx.kinds.holds_whole_numbers(operand) or rounded_to_whole(self.ctx):
            return  # `log(deg + 1)` of a degree: exact; a rounded result: the error cannot change it
        facts = self.ctx.kinds.tensor(operand)
        if facts is not None and facts.dtype == "float64":
            return  # float64 on purpose: a unit in the last place of 1 is 1e-16
        if not negated and isinstance(operand, cst.Call) and unary_operand(self.ctx, operand, EXP_FUNCTIONS, "exp") is not None:
            self.report(node, "`log(1 + exp(x))` overflows and loses precision; use `F.softplus(x)`")
            return
        severity, why = self._precision
        if negated:
            message = f"`log(1 - x)` loses precision for `x` near 0{why}; use `torch.log1p(-x)`"
        else:
            message = f"`log(1 + x)` loses precision for `x` near 0{why}; use `torch.log1p(x)`"
        self.report(node, message, fix=self._fix(node, operand, negated), severity=severity)

    def _fix(self, node: cst.Call, operand: cst.BaseExpression, negated: bool) -> FixSpec | None:
        code = self.ctx.code_for(operand)
        if negated:
            code = f"-({code})" if needs_parentheses(operand) else f"-{code}"
        if self.ctx.callee(node) is None:
            replacement = f"({code}).log1p()" if negated or needs_parentheses(operand) else f"{code}.log1p()"
        else:
            torch_name = torch_module_name(self.ctx)
            if torch_name is None or len(node.args) != 1:
                return None
            replacement = f"{torch_name}.log1p({code})"
        return FixSpec("Replace with `torch.log1p(...)`", ((node, replacement),))
