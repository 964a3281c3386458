from __future__ import annotations

import libcst as cst

from torchlint.analysis.layouts import int_value
from torchlint.analysis.names import argument, positional_args, single_index, torch_keyword
from torchlint.analysis.shape_checks import BROADCASTING_OPERATORS
from torchlint.analysis.tensor_facts.domain import TensorFacts
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule, each_construction

# Reductions and the position of `dim` in their method form (`x.norm(p, dim)`).
_REDUCTIONS = {name: 0 for name in "mean sum std var amax amin logsumexp nansum nanmean prod".split()}
_REDUCTIONS["norm"] = 1
# These return (values, indices) when given a dim: only `.values` / `[0]` is a tensor.
_VALUES_REDUCTIONS = {"max": 0, "min": 0, "median": 0}
_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


_EXPANSIONS = frozenset({"expand_as", "expand"})


def _reduction(expr: cst.BaseExpression) -> cst.Call | None:
    """The reduction call of `x.mean(...)`, `x.max(...).values`, `x.max(...)[0]`, also expanded
    (`x.mean(1).expand_as(x)` broadcasts the same way)."""
    if _expansion(expr):
        expr = expr.func.value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _REDUCTIONS:
        return expr
    if isinstance(expr, cst.Attribute) and expr.attr.value == "values":
        inner = expr.value
    elif isinstance(expr, cst.Subscript) and (index := single_index(expr)) is not None and int_value(index) == 0:
        inner = expr.value
    else:
        return None
    if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in _VALUES_REDUCTIONS:
        return inner
    return None


def _dims(expr: cst.BaseExpression) -> list[int] | None:
    if isinstance(expr, (cst.Tuple, cst.List)):
        values = [int_value(element.value) for element in expr.elements]
        return None if any(value is None for value in values) or not values else values
    value = int_value(expr)
    return None if value is None else [value]


def _expansion(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _EXPANSIONS


def _misaligns_at_any_rank(dims: list[int]) -> bool:
    """Dims counted from the start and none of them 0 (`x.mean(1)`): whatever the rank (at
    least one more than the largest), the result lines up with the wrong dims."""
    return all(dim >= 1 for dim in dims) and len(set(dims)) == len(dims)


def _misaligns(dims: list[int], rank: int) -> bool:
    """Whether the reduced result, broadcast against the input, lines up with the wrong dims:
    only reducing a leading run of dims (0, or 0 and 1...) leaves the trailing ones in place."""
    normalized = {dim % rank for dim in dims if -rank <= dim < rank}
    return len(normalized) == len(dims) and normalized != set(range(len(normalized)))


class ReductionBroadcast(Rule):
    """
    ## What it does
    Flags `x OP x.mean(dim=k)` (also `sum`, `std`, `var`, `norm`, `amax`, `amin`, `prod`,
    `logsumexp`, `x.max(dim=k).values`, `x.max(k)[0]`, with `+ - * /`, on either side) without
    `keepdim=True`, when the code shows that `x` has rank 2 or more (`B, T, C = x.shape`,
    `torch.randn(4, 3)`, `x.view(b, -1)`, what the file passes the function:
    `standardize(torch.randn(32, 64))`, a model's example input...) and `k` is not the leading dimension, or when `x`
    is a tensor of a rank the code does not show and every `k` counts from the start and is not
    0 (`x.mean(1)`: dim 1 exists, so at any rank the result meets the wrong dims). The
    reduction may be expanded back first: `x - x.mean(1).expand_as(x)` (only a tensor has
    `expand_as`).

    Not reported: `keepdim=True`; a reduction over dim 0 (or over the leading dims `(0, 1)`),
    whose result does line up with the trailing dims; a negative `k` where the rank is not shown
    (`x.mean(-1)` of a 1-D `x` is fine); a `dim` that is not a literal.

    ## Why is this bad?
    Reducing drops dimension `k`, and broadcasting aligns the remaining dims from the right, so
    the reduced values meet the wrong dimension of `x`. For `x` of shape `(N, C)`,
    `x - x.mean(dim=1)` has shape `(N,)` against `(N, C)`: a RuntimeError when `N != C`, and a
    silently wrong result (each column centred with another row's mean) when `N == C`, as with
    square test inputs.

    ## Example
    ```python
    centred = x - x.mean(dim=1)
    probs = logits.exp() / logits.exp().sum(-1)
    ```

    ## Use instead
    ```python
    centred = x - x.mean(dim=1, keepdim=True)
    probs = logits.exp() / logits.exp().sum(-1, keepdim=True)
    ```

    ## Fix safety
    The fix adds `keepdim=True` to the reduction. It is safe: the reduced dim is kept with size 1,
    so broadcasting lines it up with the dim it came from; the code it replaces either raised or
    computed values mixed across the wrong dimension.
    """

    code = "TL105"
    name = "reduction-broadcast"
    summary = "A reduction without `keepdim=True` broadcast back against its input lines up the wrong dims"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    @each_construction
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, BROADCASTING_OPERATORS):
            return
        for reduced, other in ((node.right, node.left), (node.left, node.right)):
            call = _reduction(reduced)
            if call is not None and call.func.value.deep_equals(other):
                self._check(call, expanded=call is not reduced and _expansion(reduced))

    def _check(self, call: cst.Call, expanded: bool) -> None:
        name = call.func.attr.value
        keepdim = torch_keyword(call, "keepdim")
        if keepdim is not None or any(arg.star for arg in call.args):
            return
        position = _REDUCTIONS.get(name, _VALUES_REDUCTIONS.get(name))
        if len(positional_args(call)) > position + 1:
            return  # `keepdim` (or `unbiased`) passed by position: `x.sum(1, True)`
        dim_expr = argument(call, position, "dim")
        dims = _dims(dim_expr) if dim_expr is not None else None
        facts = self.ctx.tensors.facts(call.func.value)
        if expanded and not isinstance(facts, TensorFacts):
            facts = TensorFacts()  # only a tensor has `expand_as`
        if dims is None or not isinstance(facts, TensorFacts):
            return
        if facts.rank is None:
            if not _misaligns_at_any_rank(dims):
                return
            rank = f"at least {max(dims) + 1} dims"
        elif facts.rank < 2 or not _misaligns(dims, facts.rank):
            return
        else:
            rank = f"rank {facts.rank}"
        receiver = self.ctx.code_for(call.func.value)
        dim_text = self.ctx.code_for(dim_expr)
        fixed = call.with_changes(args=(*call.args, cst.Arg(cst.Name("True"), keyword=cst.Name("keepdim"), equal=_TIGHT_EQUAL)))
        self.report(
            call,
            f"`{receiver}` has {rank}: `{name}` over dim {dim_text} without `keepdim=True` drops that dim, "
            f"and broadcasting against `{receiver}` lines the result up with its trailing dims (a shape error, "
            "or wrong values when sizes coincide); add `keepdim=True`",
            fix=FixSpec("Add `keepdim=True`", ((call, self.ctx.code_for(fixed)),), Applicability.SAFE),
        )
