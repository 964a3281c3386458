from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name
from torchlint.analysis.values import Device, ValueInfo
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_ARITHMETIC = (
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
    cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor,
)
_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
# torch functions whose tensor arguments must share a device.
_COMBINING_FUNCTIONS = frozenset(
    f"torch.{name}" for name in (
        "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "matmul", "mm", "bmm",
        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "maximum", "minimum", "where",
        "einsum", "cdist", "dot", "outer", "atan2", "lerp", "addmm", "baddbmm", "eq", "ne", "lt", "gt",
        "le", "ge", "logical_and", "logical_or", "pow", "fmod", "remainder", "hypot",
    )
)
_COMBINING_METHODS = frozenset(
    {"add", "sub", "mul", "div", "matmul", "mm", "bmm", "maximum", "minimum", "eq", "ne", "lt", "gt",
     "le", "ge", "add_", "sub_", "mul_", "div_", "logical_and", "logical_or", "pow", "lerp", "atan2",
     "masked_fill", "masked_fill_", "where"}
)


class MixedDevices(Rule):
    """
    ## What it does
    Flags a tensor created on the default device (a factory such as `torch.zeros`, `torch.arange`
    or `torch.tensor` without `device=`) that is combined in an op with a tensor known to be on an
    accelerator or on the working `device` (moved with `.to(device)` / `.cuda()`, or created with
    `device=`), including factories inside a Module's `forward()` combined with its input.

    The finding is reported at the factory call, where `device=` belongs. 0-dim tensors
    (`torch.tensor(2.0)`), Python scalars, tensors moved later in the same chain
    (`torch.arange(n).to(x.device)`) and factories given `device=x.device` are not reported.

    ## Why is this bad?
    The op raises `RuntimeError: Expected all tensors to be on the same device` as soon as the
    code runs on a GPU or MPS, although it passes every CPU-only test.

    ## Example
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1])
        return x + self.scale * positions
    ```

    ## Use instead
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device)
        return x + self.scale * positions
    ```
    """

    code = "TL301"
    name = "mixed-devices"
    summary = "Tensor created on the default device is combined with a tensor on the accelerator"
    severity = Severity.ERROR

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, _ARITHMETIC):
            self._check([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, _COMPARISONS):
            self._check([node.left, node.comparisons[0].comparator])

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        name = func.attr.value
        qualified = self.ctx.callee(node)
        if qualified is not None:
            if qualified not in _COMBINING_FUNCTIONS:
                return
            operands = []
            for arg in node.args:
                if arg.keyword is not None or arg.star:
                    continue
                if isinstance(arg.value, (cst.List, cst.Tuple)):
                    operands.extend(element.value for element in arg.value.elements)
                else:
                    operands.append(arg.value)
            self._check(operands)
        elif name in _COMBINING_METHODS and node.args:
            self._check([func.value, *(arg.value for arg in node.args if arg.keyword is None and not arg.star)])

    def _check(self, operands: list[cst.BaseExpression]) -> None:
        kinds = self.ctx.kinds
        infos = [kinds.info(operand) for operand in operands]
        tensors = [info for info in infos if info.tensor_like]
        if len(tensors) < 2:
            return
        for index, info in enumerate(infos):
            if info.device is not Device.DEFAULT or info.scalar is not False or info.origin is None:
                continue
            partner = self._partner(info, infos, index)
            if partner is None:
                continue
            factory = info.origin
            written = dotted_name(factory.func) or "factory"
            other = operands[partner]
            other_code = self.ctx.code_for(other) if isinstance(other, (cst.Name, cst.Attribute)) else None
            if infos[partner].device.is_placed:
                where = f"`{other_code}`, which is" if other_code else "a tensor"
                where += " on the accelerator/`device`"
            else:
                where = "the `forward()` input" + (f" `{other_code}`" if other_code else "")
            remedy = (
                "move it with `.to(x.device)`" if written.endswith("from_numpy") else "pass `device=` (e.g. `device=x.device`)"
            )
            self.report(
                factory,
                f"`{written}(...)` creates a tensor on the default device (CPU) but it is combined with "
                f"{where}; {remedy}",
            )

    @staticmethod
    def _partner(info: ValueInfo, infos: list[ValueInfo], index: int) -> int | None:
        for other_index, other in enumerate(infos):
            if other_index == index or not other.tensor_like:
                continue
            if other.device.is_placed:
                return other_index
            if info.origin_in_forward and other.model_input and other.device is Device.UNKNOWN:
                return other_index
        return None
