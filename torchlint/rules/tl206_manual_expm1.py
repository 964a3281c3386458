from __future__ import annotations

from functools import cached_property

import libcst as cst

from torchlint.analysis.literals import is_literal_one, is_number, needs_parentheses
from torchlint.analysis.names import positional_args
from torchlint.analysis.torch_api import EXP_FUNCTIONS, precision_severity, torch_module_name, unary_operand
from torchlint.analysis.whole_numbers import rounded_to_whole
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

_CONSTANT_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})
# Factories whose every element is one known number, whatever the sizes: `torch.ones(1)` is 1.
_FILLED_FACTORIES = frozenset({"torch.ones", "torch.ones_like"})


# Rounding to a whole number: the cancellation's error (one ulp of 1) cannot change the result.


def _is_minus_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and is_literal_one(expr.expression)


class ManualExpm1(Rule):
    """
    ## What it does
    Flags `torch.exp(x) - 1` (also `- 1.0`), `-1 + torch.exp(x)` and `x.exp() - 1`. An exponent
    written as a number (`torch.exp(torch.tensor(10.0)) - 1`, or ones: `torch.exp(torch.ones(1)) -
    1`, the softplus inverse of 1 that initialises a weight) is not flagged: its size is known. Nor
    is a result rounded to a whole number, at once or after other terms are added
    (`torch.round(torch.exp(x) - 1)`, `(x.exp() - 1).long()`, `(n + (x.exp() - 1)).round()`):
    the cancellation's error, one unit in the last place of 1, cannot change it.

    ## Why is this bad?
    For `x` near 0, `exp(x)` is close to 1 and the subtraction cancels almost every significant
    digit: in float32, `torch.exp(x) - 1` is 0 for `|x| < 6e-8` and has large relative errors well
    beyond that. `torch.expm1(x)` computes the same value accurately. Away from 0 both agree, and
    most code never sees such small `x`: a hint (shown under `show-hints = true` or `--show-hints`,
    and in the editor). Where the file also calls `log1p`, its author works with values near 0 and
    `exp(x) - 1` undoes that care on the way back: a note, which fails a run only under
    `fail-on = "note"`.

    ## Example
    ```python
    rate = torch.exp(log_rate) - 1
    ```

    ## Use instead
    ```python
    rate = torch.expm1(log_rate)
    ```

    ## Fix safety
    The fix is safe: `torch.expm1(x)` is the same function, computed more accurately; it never
    changes the result by more than rounding.

    Bug left in place: no. Computation changed: only in the low-order bits, towards the exact
    value.
    """

    code = "TL206"
    name = "manual-expm1"
    summary = "exp(x) - 1 loses precision near 0; use torch.expm1"
    severity = Severity.NOTE
    fix_applicability = Applicability.SAFE

    @cached_property
    def _precision(self) -> tuple[Severity, str]:
        """Asked at the first finding only: most files have none."""
        return precision_severity(self.ctx, "log1p")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Subtract) and is_literal_one(node.right):
            left = node.left
        elif isinstance(node.operator, cst.Add) and _is_minus_one(node.left):
            left = node.right  # `-1 + torch.exp(x)`
        else:
            return
        if not isinstance(left, cst.Call) or left.lpar:
            return
        exponent = unary_operand(self.ctx, left, EXP_FUNCTIONS, "exp")
        if exponent is None or self._is_constant(exponent) or rounded_to_whole(self.ctx):
            return
        is_method = self.ctx.callee(left) is None
        severity, why = self._precision
        self.report(
            left,
            f"`exp(x) - 1` loses precision for `x` near 0{why}; use `torch.expm1(x)`",
            fix=self._fix(node, exponent, is_method),
            severity=severity,
        )

    def _is_constant(self, exponent: cst.BaseExpression) -> bool:
        """A number written in the code (`5.0`, `torch.tensor(10.0)`, the ones of
        `torch.ones(1)`): its size is known."""
        if isinstance(exponent, cst.Call) and self.ctx.callee(exponent) in _FILLED_FACTORIES:
            return True
        if isinstance(exponent, cst.Call) and self.ctx.callee(exponent) in _CONSTANT_FACTORIES:
            positional = positional_args(exponent)
            return bool(positional) and is_number(positional[0].value)
        return is_number(exponent)

    def _fix(self, node: cst.BinaryOperation, exponent: cst.BaseExpression, is_method: bool) -> FixSpec | None:
        operand = self.ctx.code_for(exponent)
        if is_method:
            replacement = f"({operand}).expm1()" if needs_parentheses(exponent) else f"{operand}.expm1()"
        else:
            torch_name = torch_module_name(self.ctx)
            if torch_name is None:
                return None
            replacement = f"{torch_name}.expm1({operand})"
        return FixSpec("Replace with `torch.expm1(...)`", ((node, replacement),))
