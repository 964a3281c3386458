from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import keyword_arg, positional_args
from torchlint.analysis.values import string_value
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_FLOAT64 = frozenset({"torch.float64", "torch.double"})
_NARROWING_METHODS = frozenset({"float", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char"})


class Float64OnMps(Rule):
    """
    ## What it does
    Flags a float64 dtype together with an `"mps"` device in one call or chain:
    `torch.zeros(n, dtype=torch.float64, device="mps")`, `x.to("mps", torch.float64)`,
    `x.double().to("mps")`, `x.to("mps").double()`.

    A float64 tensor that is cast to another dtype before it is moved
    (`x.double().float().to("mps")`) is not reported.

    ## Why is this bad?
    The MPS backend (Apple silicon) has no float64 support: the call raises `TypeError: Cannot
    convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64`. Code
    written on a CUDA or CPU machine crashes on a Mac.

    ## Example
    ```python
    grid = torch.linspace(0, 1, 100, dtype=torch.float64, device="mps")
    ```

    ## Use instead
    ```python
    grid = torch.linspace(0, 1, 100, dtype=torch.float32, device="mps")
    ```
    """

    code = "TL306"
    name = "float64-on-mps"
    summary = "float64 tensor on the MPS device: MPS does not support float64"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._active = "mps" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._active:
            return
        # Only the outermost call of a chain is examined (the chain is walked inward from it).
        parent = self.ctx.parent
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return
        steps = self._chain(node)
        is_float64 = on_mps = False
        for call in steps:
            dtype, device = self._effect(call)
            if dtype is not None:
                is_float64 = dtype
            if device is not None:
                on_mps = device
            if is_float64 and on_mps:
                self.report(
                    call,
                    "MPS does not support float64: this creates a float64 tensor on `\"mps\"`; "
                    "use `torch.float32`",
                )
                return

    @staticmethod
    def _chain(outer: cst.Call) -> list[cst.Call]:
        """The calls of a method chain, innermost first."""
        calls = []
        node: cst.BaseExpression = outer
        while True:
            if isinstance(node, cst.Call):
                calls.append(node)
                node = node.func
            elif isinstance(node, cst.Attribute):
                node = node.value
            else:
                break
        calls.reverse()
        return calls

    def _effect(self, call: cst.Call) -> tuple[bool | None, bool | None]:
        """(is the result float64?, is it on mps?), None where the call does not say."""
        func = call.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        qualified = self.ctx.callee(call)
        dtype: bool | None = None
        device: bool | None = None
        dtype_arg = keyword_arg(call, "dtype")
        if dtype_arg is not None:
            dtype = self._is_float64(dtype_arg.value)
        device_arg = keyword_arg(call, "device")
        if device_arg is not None:
            device = self._is_mps(device_arg.value)
        if qualified is None and method is not None:
            if method == "double":
                dtype = True
            elif method in _NARROWING_METHODS:
                dtype = False
            elif method == "cpu":
                device = False
            elif method in ("cuda", "xpu"):
                device = False
            elif method in ("to", "type"):
                for arg in positional_args(call)[:2]:
                    if self._is_mps(arg.value):
                        device = True
                    elif string_value(arg.value) is not None:
                        device = False
                    elif self.ctx.qualified_name(arg.value) is not None and self.ctx.qualified_name(arg.value).startswith("torch."):
                        dtype = self._is_float64(arg.value)
        return dtype, device

    def _is_float64(self, expr: cst.BaseExpression) -> bool:
        expr = self.ctx.kinds.resolve(expr)
        return self.ctx.qualified_name(expr) in _FLOAT64

    def _is_mps(self, expr: cst.BaseExpression) -> bool:
        expr = self.ctx.kinds.resolve(expr)
        if isinstance(expr, cst.Call) and self.ctx.callee(expr) == "torch.device":
            positional = positional_args(expr)
            expr = positional[0].value if positional else expr
        text = string_value(expr)
        return text is not None and (text == "mps" or text.startswith("mps:"))
