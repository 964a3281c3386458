from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import argument, has_star_args, positional_args
from torchlint.analysis.tensors import TENSOR_FACTORIES, dtype_kind, integer_literal, requires_grad_true
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

# Factories whose default dtype is an integer one.
_INTEGER_BY_DEFAULT = frozenset({"torch.randint", "torch.randperm"})
# Factories whose dtype is inferred from the data argument(s).
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
_FROM_RANGE = frozenset({"torch.arange", "torch.range"})


class RequiresGradOnIntegerTensor(Rule):
    """
    ## What it does
    Flags a tensor factory called with `requires_grad=True` that creates an integer (or bool)
    tensor: an integer `dtype=`, integer literal data (`torch.tensor([1, 2], requires_grad=True)`),
    an integer range (`torch.arange(5, requires_grad=True)`), an integer fill value, or
    `torch.randint`.

    ## Why is this bad?
    Only floating point and complex tensors can require gradients. The call raises
    `RuntimeError: Only Tensors of floating point and complex dtype can require gradients`, usually
    in code that meant to create a float tensor and wrote `1` instead of `1.`.

    ## Example
    ```python
    w = torch.tensor([1, 2, 3], requires_grad=True)
    steps = torch.arange(10, requires_grad=True)
    ```

    ## Use instead
    ```python
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    steps = torch.arange(10, dtype=torch.float32, requires_grad=True)
    ```
    """

    code = "TL006"
    name = "requires-grad-on-integer-tensor"
    summary = "`requires_grad=True` on an integer tensor raises; create a float tensor"
    severity = Severity.ERROR

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or not requires_grad_true(node):
            return
        qualified = self.ctx.callee(node)
        if qualified not in TENSOR_FACTORIES or has_star_args(node):
            return
        kind = dtype_kind(self.ctx, node)
        if kind == "float":
            return
        if kind == "integer":
            reason = "an integer `dtype`"
        elif kind is None and self._integer_by_default(qualified, node):
            reason = "an integer dtype inferred from its arguments"
        else:
            return
        if self.ctx.guards.in_version_gate(node):
            return
        self.report(
            node,
            f"`requires_grad=True` on a tensor with {reason} raises (only floating point tensors can "
            "require gradients); use float values (`1.`) or `dtype=torch.float32`",
        )

    def _integer_by_default(self, qualified: str, node: cst.Call) -> bool:
        from_keyword = any(arg.keyword is not None and arg.keyword.value == "dtype" for arg in node.args)
        if from_keyword:
            return False
        if qualified in _INTEGER_BY_DEFAULT:
            return True
        if qualified in _FROM_DATA:
            data = argument(node, 0, "data")
            return data is not None and integer_literal(data)
        if qualified in _FROM_RANGE:
            bounds = [arg.value for arg in positional_args(node)]
            bounds += [arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value in ("start", "end", "step")]
            return bool(bounds) and all(integer_literal(bound) for bound in bounds)
        if qualified == "torch.full":
            fill = argument(node, 1, "fill_value")
            return fill is not None and integer_literal(fill) and not isinstance(fill, (cst.List, cst.Tuple))
        return False
