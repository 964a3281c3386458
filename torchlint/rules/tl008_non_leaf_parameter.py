from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import argument, keyword_arg, method_name, method_receiver, positional_args
from torchlint.analysis.tensors import PARAMETER_CLASSES, dtype_kind, requires_grad_true
from torchlint.analysis.values import names_cpu
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

# Conversions that return a new tensor (a non-leaf when the source requires grad).
_COPYING = frozenset({"cuda", "double", "half", "bfloat16"})


class NonLeafParameter(Rule):
    """
    ## What it does
    Flags a tensor created with `requires_grad=True`, or an `nn.Parameter`, that is then moved
    or cast in the same expression: `torch.randn(3, requires_grad=True).cuda()`,
    `torch.zeros(n, requires_grad=True).to(device)`, `nn.Parameter(t).to(device)`. A plain tensor
    is reported when it is used as a parameter: stored on an object, given to a `torch.optim`
    optimizer, or its `.grad` read; an input whose gradient nobody reads is left alone. A cast to
    the dtype the tensor already has returns the tensor itself: `nn.Parameter(t).to(D)` and
    `.float()` are not reported when `D` is float32 and `t` is not known to have another dtype,
    also when `D` is held in a local, a module constant or an attribute its class sets once
    (`self.compute_dtype = torch.float32`). So does a move to the device the tensor was created
    on, as written: `torch.zeros(n, device=self.device, requires_grad=True).to(self.device)`.

    ## Why is this bad?
    `.cuda()`, `.to(...)` and dtype casts return a *copy* computed from the leaf: the result is a
    non-leaf tensor. Its `.grad` stays None after `backward()` (the gradient goes to the
    discarded leaf), so an optimizer given it never updates anything; an `nn.Parameter` moved
    this way is a plain tensor, and a Module that stores it registers no parameter.

    ## Example
    ```python
    w = torch.randn(784, 10, requires_grad=True).cuda()
    self.scale = nn.Parameter(torch.ones(dim)).to(device)
    ```

    ## Use instead
    ```python
    w = torch.randn(784, 10, device="cuda", requires_grad=True)
    self.scale = nn.Parameter(torch.ones(dim, device=device))
    ```
    """

    code = "TL008"
    name = "non-leaf-parameter"
    summary = "Moving or casting a tensor that requires grad makes a non-leaf copy whose `.grad` stays None"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Per scope: local names holding a non-leaf copy, reported once used as a parameter.
        self._pending: list[dict[str, tuple[cst.Call, str]]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pending.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pending.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._pending[-1].pop(target.target.value, None)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `w.grad`: the copy's gradient is read (and is None).
        if node.attr.value == "grad" and isinstance(node.value, cst.Name):
            self._report_pending(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method not in _COPYING and method not in ("to", "float"):
            if method is None or method[:1].isupper():
                self._optimizer_arguments(node)
            return
        source = method_receiver(node)
        if not isinstance(source, cst.Call):
            return
        qualified = self.ctx.callee(source)
        if qualified is None:
            return
        is_parameter = qualified in PARAMETER_CLASSES
        if is_parameter:
            grad_arg = keyword_arg(source, "requires_grad")
            if grad_arg is not None and not requires_grad_true(source):
                return
            what = "an `nn.Parameter`"
        elif qualified.startswith("torch.") and requires_grad_true(source):
            what = "a tensor created with `requires_grad=True`"
        else:
            return
        if not self._copies(node, method, source, is_parameter) or self.ctx.guards.in_version_gate(node):
            return
        message = (
            f"`.{method}(...)` on {what} returns a non-leaf copy: its `.grad` stays None and a Module "
            "does not register it; create the tensor with `device=`/`dtype=` instead"
        )
        if is_parameter:
            self.report(node, message)
            return
        # A tensor that requires grad may be an input whose gradient nobody reads: report it when
        # it is stored on an object, or once its `.grad` is read or it is given to an optimizer.
        parent = self.ctx.parent
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Attribute):
                self.report(node, message)
            elif isinstance(target, cst.Name):
                self._pending[-1][target.value] = (node, message)

    def _optimizer_arguments(self, call: cst.Call) -> None:
        if not any(self._pending) or not (self.ctx.callee(call) or "").startswith("torch.optim."):
            return
        for arg in call.args:
            values = [arg.value]
            if isinstance(arg.value, (cst.List, cst.Tuple)):
                values = [element.value for element in arg.value.elements]
            for value in values:
                if isinstance(value, cst.Name):
                    self._report_pending(value.value)

    def _report_pending(self, name: str) -> None:
        # Innermost scope first: a function may read a module-level name.
        for scope in reversed(self._pending):
            found = scope.pop(name, None)
            if found is not None:
                self.report(*found)
                return

    def _copies(self, node: cst.Call, method: str, source: cst.Call, is_parameter: bool) -> bool:
        if method in _COPYING:
            return True
        if method == "float":
            # A no-op on the default float32; a copy from another floating dtype.
            if is_parameter:
                return self._data_not_float32(source)
            return dtype_kind(self.ctx, source) == "float" and not self._float32(source)
        # `.to(...)`
        positional = positional_args(node)
        if not node.args or any(arg.star for arg in node.args):
            return False
        first = positional[0].value if positional else None
        device = keyword_arg(node, "device")
        if first is not None and names_cpu(first) or device is not None and names_cpu(device.value):
            return False
        if len(node.args) == 1 and self._same_device(source, device.value if device is not None else first):
            return False  # `torch.zeros(n, device=d, requires_grad=True).to(d)`: the tensor itself
        dtype = keyword_arg(node, "dtype")
        only_dtype = dtype.value if dtype is not None and len(node.args) == 1 else first if len(node.args) == 1 else None
        if only_dtype is not None and self._names_float32(only_dtype):
            # Casting to float32 what was created as float32 returns the tensor itself.
            if is_parameter:
                return self._data_not_float32(source)
            return keyword_arg(source, "dtype") is not None and not self._float32(source)
        return True

    def _same_device(self, source: cst.Call, target: cst.BaseExpression | None) -> bool:
        """`.to(target)` names the device the tensor was created on, as written (`device=self.device`)."""
        created_on = keyword_arg(source, "device")
        return target is not None and created_on is not None \
            and self.ctx.code_for(created_on.value) == self.ctx.code_for(target)

    def _float32(self, source: cst.Call) -> bool:
        dtype = keyword_arg(source, "dtype")
        return dtype is not None and self._names_float32(dtype.value)

    def _data_not_float32(self, parameter: cst.Call) -> bool:
        """The Parameter's data is known to have another dtype than float32, the default one."""
        data = argument(parameter, 0, "data")
        facts = self.ctx.kinds.tensor(data) if data is not None else None
        return facts is not None and facts.dtype not in (None, "float", "float32")

    def _names_float32(self, dtype: cst.BaseExpression) -> bool:
        """`torch.float32`, also held in a local, a module constant or an attribute its class sets once
        (`self.compute_dtype = torch.float32` in `__init__`)."""
        return self.ctx.qualified_name(self.ctx.kinds.assigned(dtype)) in ("torch.float", "torch.float32")
