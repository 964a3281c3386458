from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import method_name, method_receiver, positional_args
from torchlint.analysis.torch_api import torch_module_name
from torchlint.analysis.values import string_value
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Qualified names of the NaN constants.
_NAN_CONSTANTS = frozenset(
    {"math.nan", "torch.nan", "numpy.nan", "numpy.NaN", "numpy.NAN", "cmath.nan"}
)
# `torch.eq(x, nan)` / `x.eq(nan)` and their negations.
_EQUALITY_FUNCTIONS = {"torch.eq": False, "torch.ne": True, "torch.not_equal": True}
_EQUALITY_METHODS = {"eq": False, "ne": True, "not_equal": True}


class NanEquality(Rule):
    """
    ## What it does
    Flags comparisons with NaN: `x == float("nan")`, `x != math.nan`, `x == torch.nan`,
    `np.nan == x`, `torch.eq(x, np.nan)`, `x.ne(float("nan"))`.

    ## Why is this bad?
    NaN is not equal to anything, itself included (IEEE 754): `x == nan` is always False and
    `x != nan` always True, for tensors, NumPy arrays and Python floats alike. The check never
    finds the NaN it was written for, so a diverged loss or a corrupt input goes through silently.

    ## Example
    ```python
    if loss == float("nan"):
        raise RuntimeError("training diverged")
    valid = scores != torch.nan
    ```

    ## Use instead
    ```python
    if torch.isnan(loss):
        raise RuntimeError("training diverged")
    valid = ~torch.isnan(scores)
    ```

    ## Fix safety
    The fix is safe: it replaces a comparison whose result is a constant with the test the code
    was written for. It is offered when the compared value is known to be a tensor
    (`torch.isnan(x)`, `~torch.isnan(x)`) or a Python number (`math.isnan(x)`,
    `not math.isnan(x)`, when `math` is imported); for values of unknown type (a NumPy array, a
    pandas column) the message names the test and no fix is offered.

    Bug left in place: no. Computation changed: yes, by design: the test now finds NaNs (the old
    one was constant).
    """

    code = "TL208"
    name = "nan-equality"
    summary = "Comparison with NaN is always False (True for !=): use torch.isnan / math.isnan"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1:
            return
        target = node.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return
        if self._is_nan(target.comparator):
            compared = node.left
        elif self._is_nan(node.left):
            compared = target.comparator
        else:
            return
        self._report(node, compared, negated=isinstance(target.operator, cst.NotEqual))

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.ctx.callee(node)
        if callee in _EQUALITY_FUNCTIONS:
            positional = positional_args(node)
            if len(positional) != 2 or len(node.args) != 2:
                return
            first, second = positional[0].value, positional[1].value
            negated = _EQUALITY_FUNCTIONS[callee]
        elif callee is None and method_name(node) in _EQUALITY_METHODS and len(node.args) == 1:
            first, second = method_receiver(node), node.args[0].value
            negated = _EQUALITY_METHODS[method_name(node)]
        else:
            return
        if self._is_nan(second):
            self._report(node, first, negated)
        elif self._is_nan(first):
            self._report(node, second, negated)

    def _is_nan(self, expr: cst.BaseExpression) -> bool:
        """`float("nan")`, `math.nan`, `np.nan`, `torch.nan` (also `float("NaN")`, `-float("nan")`)."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            expr = expr.expression
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "float":
            text = string_value(expr.args[0].value) if len(expr.args) == 1 else None
            return text is not None and text.strip().lower() in ("nan", "+nan", "-nan")
        return self.ctx.qualified_name(expr) in _NAN_CONSTANTS

    def _report(self, node: cst.CSTNode, compared: cst.BaseExpression, negated: bool) -> None:
        operand = self.ctx.code_for(compared)
        if self.ctx.kinds.is_tensor(compared):
            torch_name = torch_module_name(self.ctx) or "torch"
            test = f"{'~' if negated else ''}{torch_name}.isnan({operand})"
            fixable = torch_module_name(self.ctx) is not None
        elif self.ctx.kinds.is_number(compared):
            math_names = self.ctx.imports.local_names_for("math")
            test = f"{'not ' if negated else ''}{math_names[0] if math_names else 'math'}.isnan({operand})"
            fixable = bool(math_names)
        else:
            test = f"{'~' if negated else ''}torch.isnan({operand})"
            fixable = False
        fix = FixSpec(f"Replace with `{test}`", ((node, _parenthesized(node, test)),)) if fixable else None
        self.report(
            node,
            f"comparing with NaN is always {'True' if negated else 'False'}: NaN equals nothing, "
            f"itself included; use `{test}`" + ("" if fixable else " (`np.isnan` for an array)"),
            fix=fix,
        )


def _parenthesized(node: cst.CSTNode, replacement: str) -> str:
    """Keep the parentheses written around the comparison: they are part of its source text."""
    lpar = getattr(node, "lpar", ())
    return "(" * len(lpar) + replacement + ")" * len(lpar)
