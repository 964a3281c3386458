from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Tensor methods that return a converted copy and leave the receiver unchanged.
_CONVERSIONS = frozenset(
    {"to", "cuda", "cpu", "xpu", "type", "float", "half", "double", "bfloat16", "long", "int",
     "short", "char", "byte", "bool", "cfloat", "cdouble"}
)


class DiscardedTo(Rule):
    """
    ## What it does
    Flags a tensor conversion (`t.to(...)`, `t.cuda()`, `t.cpu()`, `t.float()`, `t.half()`,
    `t.long()`...) written as a statement on its own, when `t` is known to be a tensor: the
    result of a torch op or factory, a function parameter annotated as a tensor or used as one
    (`t.shape`, `t.view(...)`, `t.unsqueeze(...)`), a batch from a `DataLoader` loop, a model's
    parameter, an element of a loop over tensors, what a method only tensors have returns
    (`x.contiguous()`, `x.permute(...)`), or a name inside `if torch.is_tensor(t):` /
    `if isinstance(t, torch.Tensor):`.

    ## Why is this bad?
    Unlike `nn.Module.to()`, which moves a module's parameters in place, `Tensor.to()` and the
    dtype shortcuts return a new tensor and leave the receiver as it was. The statement does
    nothing: the tensor stays on its old device or in its old dtype, which surfaces later as a
    device mismatch, a dtype error, or silently lower precision.

    Receivers that are modules (also a value under `if isinstance(value, nn.Module):`, which
    other branches use as a tensor), or whose kind is unknown, are not reported: among them a
    layer's weight the method replaced with another library's object (`self.linear.weight =
    bnb.nn.Params4bit(...)`, whose `.cuda()` quantizes it in place). Neither are top-level
    expressions in notebooks (a cell displays them).

    ## Example
    ```python
    coordinates = input_coords.clone()
    coordinates.to(torch.float32)
    ```

    ## Use instead
    ```python
    coordinates = input_coords.clone()
    coordinates = coordinates.to(torch.float32)
    ```

    ## Fix safety
    The fix assigns the result back to the receiver (`x = x.to(d)`). It is offered when the
    receiver is a plain name or attribute chain, and is safe: it performs the conversion the
    statement was written for.

    Bug left in place: no. Computation changed: yes, by design: the tensor is converted, as the
    statement intended. Other names bound to the old tensor keep it, and an `nn.Parameter`
    attribute cannot be reassigned a plain tensor (`self.weight = self.weight.to(d)` raises): move
    the module instead.
    """

    code = "TL304"
    name = "discarded-to"
    summary = "Tensor `.to()`/`.cuda()`/`.float()` result discarded: tensors are not converted in place"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return
        method = call.func.attr.value
        if method not in _CONVERSIONS or (method == "type" and not call.args):
            return
        receiver = call.func.value
        if not self.ctx.tensors.is_tensor(receiver):
            return
        if self.ctx.path.endswith(".ipynb") and self.ctx.enclosing_function() is None:
            return  # a notebook cell's top-level expression is displayed, not discarded
        written = dotted_name(receiver)
        if written is None:
            self.report(
                call,
                f"the result of `.{method}(...)` is discarded: tensors are not converted in place; "
                "assign the result to a variable",
            )
            return
        assignment = f"{written} = {written}.{method}(...)"
        self.report(
            call,
            f"the result of `{written}.{method}(...)` is discarded: tensors are not converted in place; "
            f"assign it back: `{assignment}`",
            fix=FixSpec(
                f"Assign the result back: `{assignment}`",
                ((call, f"{self.ctx.code_for(receiver)} = {self.ctx.code_for(call)}"),),
                Applicability.SAFE,
            ),
        )
