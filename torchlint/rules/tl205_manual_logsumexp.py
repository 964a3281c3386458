from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import argument, is_constant_none, keyword_arg, positional_args
from torchlint.analysis.torch_api import (
    EXP_FUNCTIONS, LOG_FUNCTIONS, SUM_FUNCTIONS, torch_module_name, unary_operand,
)
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order


class ManualLogsumexp(Rule):
    """
    ## What it does
    Flags `log(sum(exp(x), dim))` written out: `torch.log(torch.sum(torch.exp(x), dim=1))`,
    `x.exp().sum(-1).log()` and their mixes, also when the intermediate results pass through
    local variables. A sum without `dim` and an exponent that is already shifted
    (`exp(x - x.max())`, the hand-stabilised form, also through a name every branch assigns a
    difference, or as `x -= x.max(dim=1, keepdim=True)[0]` before) are not flagged.

    ## Why is this bad?
    `exp` overflows to `inf` for inputs above about 88 in float32 (11 in float16), and every term
    underflows to 0 when all inputs are very negative: the result is `inf` or `-inf` where the true
    value is an ordinary number. `torch.logsumexp` subtracts the maximum first and is exact over
    the whole range, in one fused kernel.

    ## Example
    ```python
    log_normalizer = torch.log(torch.sum(torch.exp(scores), dim=-1))
    ```

    ## Use instead
    ```python
    log_normalizer = torch.logsumexp(scores, dim=-1)
    ```

    ## Fix safety
    The fix is safe: `torch.logsumexp(x, dim, keepdim)` equals the written expression wherever
    that one is finite. It is offered when all three calls are written in one expression and the
    sum takes only `dim` and `keepdim`.

    Bug left in place: no. Computation changed: only where the written form overflowed or
    underflowed (now finite).
    """

    code = "TL205"
    name = "manual-logsumexp"
    summary = "log(sum(exp(x))) written by hand overflows; use torch.logsumexp"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        logged = unary_operand(self.ctx, node, LOG_FUNCTIONS, "log")
        if logged is None:
            return
        total = self.ctx.values.resolve(logged)
        if not isinstance(total, cst.Call):
            return
        summed = unary_operand(self.ctx, total, SUM_FUNCTIONS, "sum", method_takes_args=True)
        if summed is None:
            return
        is_method = self.ctx.callee(total) is None
        dim = argument(total, 0 if is_method else 1, "dim")
        if dim is None or is_constant_none(dim):
            return
        exponential = self.ctx.values.resolve(summed)
        if not isinstance(exponential, cst.Call):
            return
        exponent = unary_operand(self.ctx, exponential, EXP_FUNCTIONS, "exp")
        if exponent is None or self._already_shifted(exponent):
            return
        inline = total is logged and exponential is summed
        fix = self._fix(node, total, exponent, dim, is_method) if inline else None
        self.report(node, "`log(sum(exp(x), dim))` overflows for large `x`; use `torch.logsumexp(x, dim)`", fix=fix)

    def _already_shifted(self, exponent: cst.BaseExpression) -> bool:
        """`exp(x - x.max())`, also through a name assigned so (on every branch: `stable = x - m`
        and `stable = x - m.unsqueeze(dim)`), or shifted in place before:
        `x -= x.max(dim=1, keepdim=True)[0]`."""
        value = self.ctx.values.resolve(exponent)
        if _is_difference(value):
            return True
        function = self.ctx.enclosing_function()
        if not isinstance(exponent, cst.Name) or function is None:
            return False
        name = exponent.value
        assigned = [node.value for node in nodes_in_order(function.body) if isinstance(node, cst.Assign)
                    and any(isinstance(target.target, cst.Name) and target.target.value == name for target in node.targets)]
        return bool(assigned) and all(_is_difference(value) for value in assigned) or any(
            isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.SubtractAssign)
            and isinstance(node.target, cst.Name) and node.target.value == name
            for node in nodes_in_order(function.body))

    def _fix(
        self, log_call: cst.Call, total: cst.Call, exponent: cst.BaseExpression, dim: cst.BaseExpression,
        is_method: bool,
    ) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        if torch_name is None:
            return None
        allowed = 1 if is_method else 2
        keywords = [arg for arg in total.args if arg.keyword is not None]
        if any(arg.star for arg in total.args) or len(positional_args(total)) > allowed:
            return None
        if any(arg.keyword.value not in ("dim", "keepdim", "input") for arg in keywords):
            return None
        keepdim = keyword_arg(total, "keepdim")
        code = self.ctx.code_for
        extra = f", keepdim={code(keepdim.value)}" if keepdim is not None else ""
        replacement = f"{torch_name}.logsumexp({code(exponent)}, {code(dim)}{extra})"
        return FixSpec("Replace with `torch.logsumexp(...)`", ((log_call, replacement),))


def _is_difference(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract)
