from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name, is_constant_false, keyword_arg, method_name, positional_args
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Out-of-place tensor methods with an in-place variant (`clamp` -> `clamp_`).
_WITH_IN_PLACE = frozenset(
    {
        "abs", "neg", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "pow", "square", "sin",
        "cos", "tanh", "sigmoid", "relu", "clamp", "clamp_min", "clamp_max", "clip", "floor", "ceil",
        "round", "trunc", "sign", "reciprocal", "add", "sub", "mul", "div", "fmod", "remainder", "lerp",
        "addcmul", "addcdiv", "masked_fill", "masked_scatter", "index_fill", "index_add", "index_copy",
        "scatter", "scatter_add", "t", "transpose", "squeeze", "unsqueeze", "detach", "nan_to_num",
        "tril", "triu", "logical_not", "erf",
    }
)
# Out-of-place tensor methods without one: the result can only be assigned.
_WITHOUT_IN_PLACE = frozenset(
    {"contiguous", "clone", "permute", "reshape", "view", "flatten", "expand", "expand_as", "repeat",
     "flip", "roll", "softmax", "log_softmax", "masked_select", "where"}
)
_TENSOR_METHODS = _WITH_IN_PLACE | _WITHOUT_IN_PLACE
# Functions whose first argument is the tensor they return a changed copy of, and the tensor
# method that does the same (None: there is none).
_FUNCTIONS = {
    **{f"torch.{name}": name for name in _TENSOR_METHODS if name not in ("contiguous", "view", "expand_as")},
    **{f"torch.nn.functional.{name}": name for name in ("relu", "sigmoid", "tanh", "softmax", "log_softmax")},
    "torch.nn.functional.normalize": None,
    "torch.nn.functional.dropout": None,
    "torch.nn.functional.pad": None,
}


class DiscardedTensorOp(Rule):
    """
    ## What it does
    Flags an out-of-place tensor operation written as a statement of its own, whose result is
    thrown away: `x.clamp(0, 1)`, `x.add(1)`, `x.mul(scale)`, `x.detach()`, `x.relu()`,
    `x.masked_fill(mask, 0)`, `x.contiguous()`, `x.t()`, `torch.clamp(x, 0, 1)`,
    `F.normalize(x)`: a method when `x` is known to be a tensor, a torch function whatever its
    argument (it returns a new tensor or raises, so `torch.clamp(w, min=0)` on a `w` filled
    through `out=` is reported too).

    Not flagged: in-place methods (`x.clamp_(0, 1)`), conversions (`x.to(...)`, `x.float()`:
    those are TL304's), calls with `out=` or `inplace=True`, methods on receivers whose kind is unknown,
    functions with effects (`torch.manual_seed(...)`), warm-up work on a side stream (under `with
    torch.cuda.stream(s):`, as CUDA graphs want before a capture), and top-level expressions of a
    notebook cell (the cell displays them).

    ## Why is this bad?
    These operations return a new tensor and leave their input as it was. As a statement, the
    call computes a result nobody reads: the author meant the in-place variant (`x.clamp_(0, 1)`)
    or forgot the assignment (`x = x.clamp(0, 1)`), and the code goes on with the unchanged
    tensor: weights that were never clipped, a mask never applied, a tensor never detached.

    ## Example
    ```python
    for p in model.parameters():
        p.data.clamp(-0.01, 0.01)
    ```

    ## Use instead
    ```python
    for p in model.parameters():
        p.data.clamp_(-0.01, 0.01)
    ```

    ## Fix safety
    Where an in-place variant exists, the fix calls it on the same tensor (`x.clamp_(0, 1)`,
    `torch.clamp(x, 0, 1)` -> `x.clamp_(0, 1)`). It is unsafe: it changes what the program
    computes (that is its purpose), and in-place operations can fail where the out-of-place ones
    did not (on a leaf that requires grad, on a tensor autograd saved for backward, on an
    expanded view), or change a tensor that other names share. Operations without an in-place
    variant get no fix: assign the result.

    Bug left in place: no where the in-place variant was meant; where the author meant `y = x.op()`
    with `x` unchanged, the fix changes `x`, which is why it is unsafe. Computation changed: yes,
    by design.
    """

    code = "TL307"
    name = "discarded-tensor-op"
    summary = "Out-of-place tensor op used as a statement: its result is discarded"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or keyword_arg(call, "out") is not None:
            return
        inplace = keyword_arg(call, "inplace")
        if inplace is not None and not is_constant_false(inplace.value):
            return
        callee = self.ctx.callee(call)
        if callee is not None:
            if callee not in _FUNCTIONS:
                return
            positional = positional_args(call)
            if not positional:
                return
            # A torch function returns a new tensor whatever its argument holds (or raises): its
            # result thrown away is the bug, so the argument's kind need not be known.
            tensor, method, rest = positional[0].value, _FUNCTIONS[callee], call.args[1:]
            written = f"{self.ctx.code_for(call.func)}(...)"
        else:
            method = method_name(call)
            if method not in _TENSOR_METHODS:
                return
            tensor, rest = call.func.value, call.args
            written = f"{self.ctx.code_for(tensor)}.{method}(...)" if dotted_name(tensor) else f".{method}(...)"
            if not self.ctx.kinds.is_tensor(tensor):
                return
        if self.ctx.path.endswith(".ipynb") and self.ctx.enclosing_function() is None:
            return  # a notebook cell's top-level expression is displayed, not discarded
        if self._on_side_stream():
            return
        self._report(call, written, tensor, method, rest)

    def _on_side_stream(self) -> bool:
        """Under `with torch.cuda.stream(s):`: work launched on a side stream and thrown away warms
        kernels up, as CUDA graphs want before a capture."""
        return any(
            isinstance(node, cst.With) and any(
                isinstance(item.item, cst.Call) and self.ctx.callee(item.item) == "torch.cuda.stream" for item in node.items)
            for node in self.ctx.ancestors
        )

    def _report(self, call: cst.Call, written: str, tensor: cst.BaseExpression, method: str | None, rest) -> None:
        name = dotted_name(tensor)
        if method in _WITH_IN_PLACE and name is not None and not any(arg.star for arg in rest):
            arguments = ", ".join(self.ctx.code_for(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for arg in rest)
            replacement = f"{self.ctx.code_for(tensor)}.{method}_({arguments})"
            advice = f"use `{name}.{method}_(...)` to change `{name}` in place, or assign the result"
            fix = FixSpec(f"Use the in-place `{name}.{method}_(...)`", ((call, replacement),), Applicability.UNSAFE)
        else:
            advice = "assign the result"
            fix = None
        self.report(call, f"the result of `{written}` is discarded: it returns a new tensor and leaves its input unchanged; {advice}", fix=fix)

