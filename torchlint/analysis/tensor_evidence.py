"""Whether a value is a tensor on the accelerator, also when `ctx.tensors` cannot see it created.

`ctx.tensors` knows the tensors made by torch factories and ops. Training code holds many more
whose creation it cannot see, and shows what they are by how it treats them: the output of a
module (`out = netD(x)`, `model(x)` for a `model` parameter), a loss (`criterion(out, y)`,
`loss_fn(...)`; a tensor anyway once `loss.backward()` is called on it), a batch moved with
`.to(device)`, the elements of a tuple unpacked from one of these (`_, pred = torch.max(out, 1)`,
`x, y = x.to(device), y.to(device)`), and everything computed from them by tensor methods,
arithmetic and comparisons (`(out.argmax(1) == y).sum()`). The caller passes the names it knows
to be tensors from the structure around the question (the subjects of `backward()` in the loop,
the elements of a loop over parameters).

`places_on_accelerator(source)` tells whether a file moves anything to an accelerator at all
(`.cuda()`, `.to(device)`, `device=`, `accelerator.prepare`, `DataParallel`...): in a file that
never does, every tensor lives on the CPU.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.module_values import holds_module
from torchlint.analysis.names import dotted_name, nested_statement_lists, positional_args, suite_statements
from torchlint.analysis.tensor_facts.domain import Device, DeviceValue, DtypeValue, ModuleValue, Number, TensorFacts

_PLACEMENT = re.compile(
    r"\.(cuda|to_device|prepare|prepare_model)\s*\(|\.to\(\s*(?!(torch\.)?(u?int\d*|float\d*|half|double|bfloat16|"
    r"long|bool|complex\d*|[a-z_]*dtype)\b)|\bdevice\s*=|DataParallel|xla_device|device_map\s*="
    r"|[\"'](cuda|mps|xpu)[\"':]|\b(Accelerator|Fabric)\("
)
# A callee named like a loss: `criterion(out, y)`, `self.loss_fn(...)`, `compute_loss(...)`.
_LOSS_NAME = re.compile(r"criterion|crit|loss", re.IGNORECASE)
# Attributes of a tensor that are not tensors on its device.
_NOT_TENSOR_ATTRIBUTES = frozenset(
    {"shape", "device", "dtype", "ndim", "requires_grad", "is_cuda", "grad_fn", "is_leaf", "layout", "names"}
)
# Methods whose result is not a tensor on the receiver's device.
_NOT_TENSOR_METHODS = frozenset(
    {"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "nelement", "element_size", "get_device", "keys",
     "stride", "data_ptr", "is_contiguous", "__len__", "get", "format", "join", "split", "strip", "copy"}
)
_MAX_DEPTH = 10


def places_on_accelerator(source: str) -> bool:
    """The file moves something to an accelerator (see the module docstring)."""
    return _PLACEMENT.search(source) is not None


class TensorEvidence:
    """Answers `on_device(expr, known)` at the current point of the walk."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        # id(scope) -> name -> the expressions a tuple target gave it (`a, b = f()` gives `a` f()).
        self._unpacked: dict[int, dict[str, list[cst.BaseExpression]]] = {}

    def on_device(self, expr: cst.BaseExpression, known: frozenset[str], depth: int = 0) -> bool:
        """`expr` is a tensor not known to live on the CPU; `known` are names of tensors as written."""
        value = self._ctx.tensors.facts(expr)
        if isinstance(value, TensorFacts) and (not value.maybe or value.device is not Device.UNKNOWN):
            return value.device not in (Device.DEFAULT, Device.CPU)
        if isinstance(value, (Number, ModuleValue, DeviceValue, DtypeValue)) or depth > _MAX_DEPTH:
            return False
        written = dotted_name(expr)
        if written is not None and written in known:
            return True
        deeper = depth + 1
        if isinstance(expr, cst.Name):
            value = self._ctx.values.value_of(expr.value)
            if isinstance(value, cst.BaseExpression):
                return self.on_device(value, known, deeper)
            if value is None:
                return any(self.on_device(part, known, deeper) for part in self._unpacked_values(expr.value))
            return False
        if isinstance(expr, cst.Attribute):
            return expr.attr.value not in _NOT_TENSOR_ATTRIBUTES and self.on_device(expr.value, known, deeper)
        if isinstance(expr, cst.Subscript):
            return self.on_device(expr.value, known, deeper)
        if isinstance(expr, cst.BinaryOperation):
            return self.on_device(expr.left, known, deeper) or self.on_device(expr.right, known, deeper)
        if isinstance(expr, cst.Comparison):
            operands = [expr.left, *(target.comparator for target in expr.comparisons)]
            return any(self.on_device(operand, known, deeper) for operand in operands)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.on_device(expr.expression, known, deeper)
        if isinstance(expr, cst.Call):
            return self._call(expr, known, deeper)
        return False

    def _call(self, call: cst.Call, known: frozenset[str], depth: int) -> bool:
        qualified = self._ctx.callee(call)
        arguments = [arg.value for arg in positional_args(call)]
        if qualified is not None:
            # `torch.max(out, 1)` (a tuple of tensors): on the device of its tensor arguments. A
            # dataset or loader of `torch.utils.data` holds tensors but is none: its walk is a
            # walk over batches.
            return qualified.startswith("torch.") and not qualified.startswith("torch.utils.data.") and any(
                self.on_device(a, known, depth) for a in arguments)
        func = call.func
        if holds_module(self._ctx, func):
            return True  # a module's output
        if isinstance(func, cst.Attribute):
            if func.attr.value in _NOT_TENSOR_METHODS:
                return False
            return self.on_device(func.value, known, depth) or (
                # `pred.eq(target)`: a tensor method with a tensor argument.
                any(self.on_device(a, known, depth) for a in arguments) and not holds_module(self._ctx, func.value)
            )
        name = func.value if isinstance(func, cst.Name) else None
        return name is not None and _LOSS_NAME.search(name) is not None

    def _unpacked_values(self, name: str) -> list[cst.BaseExpression]:
        """What tuple targets of the enclosing function (or module) give `name`."""
        scope = self._ctx.enclosing_function() or self._ctx.module
        table = self._unpacked.get(id(scope))
        if table is None:
            table = {}
            body = scope.body if isinstance(scope, cst.Module) else suite_statements(scope.body)
            _collect_unpacking(body, table)
            self._unpacked[id(scope)] = table
        return table.get(name, [])


def _collect_unpacking(statements, table: dict[str, list[cst.BaseExpression]]) -> None:
    for statement in statements:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        _unpack(target.target, small.value, table)
            continue
        for nested in nested_statement_lists(statement):
            _collect_unpacking(nested, table)


def _unpack(target: cst.BaseExpression, value: cst.BaseExpression, table) -> None:
    if not isinstance(target, (cst.Tuple, cst.List)):
        return
    parts = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
    for position, element in enumerate(target.elements):
        inner = element.value
        given = parts[position].value if parts is not None and position < len(parts) else value
        if isinstance(inner, cst.Name):
            table.setdefault(inner.value, []).append(given)
        else:
            _unpack(inner, given, table)
