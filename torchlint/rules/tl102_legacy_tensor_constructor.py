from __future__ import annotations

import libcst as cst

from torchlint.analysis.tensors import LEGACY_CONSTRUCTOR_DTYPES
from torchlint.analysis.torch_api import torch_module_name
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule

_CONSTRUCTORS = {
    f"{module}.{name}": (name, module == "torch.cuda")
    for module in ("torch", "torch.cuda")
    for name in LEGACY_CONSTRUCTOR_DTYPES
    if not (module == "torch.cuda" and name == "Tensor")
}


def _is_int_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer)


class LegacyTensorConstructor(Rule):
    """
    ## What it does
    Flags calls of the legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and their kin with arguments.

    ## Why is this bad?
    The legacy constructors guess what their arguments mean. Integers are taken as a shape:
    `torch.Tensor(3)` is a tensor of three *uninitialized* floats, not the number 3, and its
    garbage values silently flow into the computation. A tensor argument is aliased rather than
    copied, and `torch.Tensor` always produces the default float dtype, whatever the data.

    ## Example
    ```python
    scale = torch.Tensor(3)            # three uninitialized floats
    weights = torch.Tensor([1, 2, 3])  # float32, even though the data are ints
    ```

    ## Use instead
    ```python
    scale = torch.tensor(3.0)          # the number 3
    buffer = torch.empty(3)            # explicitly uninitialized, if that is what was meant
    weights = torch.tensor([1, 2, 3], dtype=torch.float32)
    ```

    ## Fix safety
    The fix is safe: `torch.Tensor(3, 4)` becomes `torch.empty(3, 4)` (identical behaviour, now
    explicit) and `torch.Tensor([1, 2])` becomes `torch.tensor([1, 2], dtype=torch.float32)`
    (the same values and dtype). Other argument forms get no fix.
    """

    code = "TL102"
    name = "legacy-tensor-constructor"
    summary = "Legacy tensor constructor: integer arguments become a shape of uninitialized memory"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args:
            return
        constructor = _CONSTRUCTORS.get(self.ctx.callee(node) or "")
        if constructor is None:
            return
        name, on_cuda = constructor
        written = self.ctx.code_for(node.func)
        if all(not arg.keyword and not arg.star and _is_int_literal(arg.value) for arg in node.args):
            message = (
                f"`{written}(...)` with integers allocates uninitialized memory of that shape; "
                "use `torch.empty(...)` or `torch.zeros(...)` for a shape, `torch.tensor(...)` for a value"
            )
        else:
            message = (
                f"`{written}(...)` is a legacy constructor (integers become a shape, tensors are aliased); "
                "use `torch.tensor(...)` for data or `torch.empty(...)` for a shape"
            )
        self.report(node, message, fix=self._fix(node, name, on_cuda))

    def _fix(self, node: cst.Call, name: str, on_cuda: bool) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        if torch_name is None or any(arg.keyword or arg.star for arg in node.args):
            return None
        arguments = ", ".join(self.ctx.code_for(arg.value) for arg in node.args)
        device = ', device="cuda"' if on_cuda else ""
        dtype = LEGACY_CONSTRUCTOR_DTYPES[name]
        if all(_is_int_literal(arg.value) for arg in node.args):
            # `torch.Tensor(3, 4)` already had the default dtype: say nothing more than it did.
            dtype_argument = f", dtype={torch_name}.{dtype}" if dtype else ""
            replacement = f"{torch_name}.empty({arguments}{dtype_argument}{device})"
            return FixSpec("Replace with `torch.empty(...)`", ((node, replacement),))
        if len(node.args) == 1 and isinstance(node.args[0].value, (cst.List, cst.Tuple)):
            # `torch.tensor` would infer int64 from integer data; keep the legacy float dtype.
            replacement = f"{torch_name}.tensor({arguments}, dtype={torch_name}.{dtype or 'float32'}{device})"
            return FixSpec("Replace with `torch.tensor(...)`", ((node, replacement),))
        return None
