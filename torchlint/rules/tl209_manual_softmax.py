from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import argument, is_constant_true, keyword_arg, method_name, positional_args
from torchlint.analysis.torch_api import EXP_FUNCTIONS, SUM_FUNCTIONS, torch_module_name, unary_operand
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule


class ManualSoftmax(Rule):
    """
    ## What it does
    Flags a softmax written out as `exp(x)` divided by its sum over a dimension:
    `torch.exp(x) / torch.exp(x).sum(dim=1, keepdim=True)`, `x.exp() / x.exp().sum(-1,
    keepdim=True)`, and the same through local names (`e = torch.exp(x); e / e.sum(1,
    keepdim=True)`, also with the sum expanded by `.unsqueeze(dim)`). The softmax sibling of
    TL205.

    Not flagged: an exponent already shifted (`exp(x - x.max(dim, keepdim=True).values)`, the
    hand-stabilised form), an exponent that is a negation (`exp(-distance)`, a kernel that cannot
    overflow), a sum over every element (no `dim`: a normalisation of the whole tensor), and two
    different exponentials.

    ## Why is this bad?
    `exp` overflows to `inf` for inputs above about 88 in float32 (11 in float16), and `inf / inf`
    is NaN: one large logit turns the whole row into NaN, and training diverges. When every input
    is very negative, every term underflows to 0 and `0 / 0` is NaN too. `torch.softmax`
    subtracts the row's maximum first and is exact over the whole range, in one fused kernel.

    ## Example
    ```python
    probabilities = torch.exp(logits) / torch.exp(logits).sum(dim=-1, keepdim=True)
    ```

    ## Use instead
    ```python
    probabilities = torch.softmax(logits, dim=-1)
    ```

    ## Fix safety
    The fix is safe: `torch.softmax(x, dim)` equals the written expression wherever that one is
    finite. It is offered when the whole expression is written in one place (no local names) and
    the sum keeps its dimension (`keepdim=True`, or `.unsqueeze(dim)` of the same dim): without
    it, the division broadcasts the sum along another axis, a second bug the author must look at.

    Bug left in place: no. Computation changed: only where the written form overflowed or
    underflowed to NaN (now finite).
    """

    code = "TL209"
    name = "manual-softmax"
    summary = "exp(x) / exp(x).sum(dim) written by hand overflows to NaN; use torch.softmax"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._has_exp = "exp(" in ctx.source

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not self._has_exp or not isinstance(node.operator, cst.Divide):
            return
        exponent = self._exponent(node.left)
        if exponent is None or self._cannot_overflow(exponent):
            return
        total, expanded_dim = self._unexpanded(self.ctx.values.resolve(node.right))
        summed = unary_operand(self.ctx, total, SUM_FUNCTIONS, "sum", method_takes_args=True) if isinstance(
            total, cst.Call) else None
        if summed is None:
            return
        dim = argument(total, 0 if self.ctx.callee(total) is None else 1, "dim")
        summed_exponent = self._exponent(summed)
        if dim is None or summed_exponent is None or not self._same(exponent, summed_exponent):
            return
        inline = isinstance(node.left, cst.Call) and isinstance(summed, cst.Call)
        self.report(
            node, "`exp(x) / exp(x).sum(dim)` overflows to NaN for large `x`; use `torch.softmax(x, dim)`",
            fix=self._fix(node, total, exponent, dim, expanded_dim) if inline else None,
        )

    def _exponent(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        exponential = self.ctx.values.resolve(expr)
        if not isinstance(exponential, cst.Call):
            return None
        return unary_operand(self.ctx, exponential, EXP_FUNCTIONS, "exp")

    def _unexpanded(self, expr: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression | None]:
        """The sum inside `total.unsqueeze(d)` (with `d`), else the expression itself."""
        if isinstance(expr, cst.Call) and method_name(expr) == "unsqueeze" and len(expr.args) == 1:
            return self.ctx.values.resolve(expr.func.value), expr.args[0].value
        return expr, None

    def _cannot_overflow(self, exponent: cst.BaseExpression) -> bool:
        """A shifted exponent (`x - max`, `(x - max) / t`) or a negated one (`-distance`): written
        to stay finite. Also an exponent whose name was rebound to the exponential itself
        (`a = a - a.max(...)` then `a = torch.exp(a)`): what it held is not known here."""
        value = self.ctx.values.resolve(exponent)
        if isinstance(exponent, cst.Name) and self._exponent(exponent) is not None:
            return True
        return _shifted(value) or _negated(value)

    def _same(self, first: cst.BaseExpression, second: cst.BaseExpression) -> bool:
        code = self.ctx.code_for
        return code(self.ctx.values.resolve(first)) == code(self.ctx.values.resolve(second))

    def _fix(self, node: cst.BinaryOperation, total: cst.Call, exponent: cst.BaseExpression,
             dim: cst.BaseExpression, expanded_dim: cst.BaseExpression | None) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        code = self.ctx.code_for
        # The sum (or its unsqueeze) is written in the division, not reached through a name.
        written_here = node.right is total or (
            expanded_dim is not None and isinstance(node.right, cst.Call) and node.right.func.value is total)
        if torch_name is None or not written_here or any(arg.star for arg in total.args):
            return None
        allowed = {"dim", "keepdim", "input"}
        if any(arg.keyword is not None and arg.keyword.value not in allowed for arg in total.args):
            return None
        keepdim = keyword_arg(total, "keepdim")
        keeps = keepdim is not None and is_constant_true(keepdim.value)
        expanded = expanded_dim is not None and keepdim is None and code(expanded_dim) == code(dim)
        limit = 1 if self.ctx.callee(total) is None else 2
        if not (keeps or expanded) or len(positional_args(total)) > limit:
            return None
        replacement = f"{torch_name}.softmax({code(exponent)}, dim={code(dim)})"
        return FixSpec("Replace with `torch.softmax(...)`", ((node, replacement),))


def _negated(expr: cst.BaseExpression) -> bool:
    """`-d`, `-d / t`, `-0.5 * d`: an exponent written as a negation."""
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, cst.Minus)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        return _negated(expr.left) != _negated(expr.right)
    return False


def _shifted(expr: cst.BaseExpression) -> bool:
    """`x - m`, or it scaled: `(x - m) / t`."""
    if not isinstance(expr, cst.BinaryOperation):
        return False
    if isinstance(expr.operator, cst.Subtract):
        return True
    return isinstance(expr.operator, (cst.Multiply, cst.Divide)) and (_shifted(expr.left) or _shifted(expr.right))
