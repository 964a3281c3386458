"""What kind of value an expression holds at the current point of the walk, asked via `ctx.kinds`.

`ctx.kinds.info(expr)` answers with a `ValueInfo`: the `Kind` (a tensor, an `nn.Module`, a Python
number, a device, or unknown) and, for tensors, what is known about them: the `Device` they live
on, whether they are 0-dim, the factory call that created them on the default device, whether
they derive from a `forward()` input, whether they require grad.

Knowledge comes from torch factories and ops (resolved through the imports), tensor methods and
arithmetic on known tensors, annotations (`x: torch.Tensor`), `forward()` parameters of Module
classes, constructors of `torch.nn` and of this file's Module classes, and the flow-sensitive
local values of `ctx.values`. Anything else is `Kind.UNKNOWN`: rules stay quiet on unknowns.

How rules ask (all answers are as of the current point of the walk):

    info = self.ctx.kinds.info(expr)          # ValueInfo(kind, device, scalar, origin, ...)
    self.ctx.kinds.is_tensor(expr)            # Kind.TENSOR (never a module, never unknown)
    self.ctx.kinds.is_module(expr)            # nn.Module instance: `nn.Linear(...)`, `Net()`, `self`
    self.ctx.kinds.is_number(expr)            # Python number: literals, len(), .item(), float(t)
    self.ctx.kinds.device_of(expr)            # Device.DEFAULT / CPU / ACCELERATOR / TARGET / UNKNOWN
    self.ctx.kinds.device_value(arg)          # where a device argument points ("cuda", x.device)
    self.ctx.kinds.is_dtype(arg)              # torch.float32, x.dtype, a `dtype` name
    self.ctx.kinds.resolve(expr)              # ctx.values.resolve + module-level constants

`info.tensor_like` also accepts values of unknown kind moved to a device (`batch.to(device)`):
only tensors survive arithmetic, so in an op they are tensors on that device.

Answers are memoized per node. A node is answered as of the point of the walk where it stands:
the analysis is a walk participant that, just before an assignment binds its target, answers the
assigned expression, so that `x = x.to(device)` is understood with the old `x`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.modules import is_torch_module_class
from torchlint.analysis.names import keyword_arg, positional_args
from torchlint.analysis.tensor_facts.domain import Device
from torchlint.analysis.tensors import LEGACY_CONSTRUCTORS

if TYPE_CHECKING:
    from torchlint.context import FileContext


class Kind(enum.Enum):
    TENSOR = "tensor"
    MODULE = "module"
    NUMBER = "number"  # a Python int/float/bool
    DEVICE = "device"  # torch.device, `x.device`, "cuda:0"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ValueInfo:
    kind: Kind
    device: Device = Device.UNKNOWN
    # True: known 0-dim; False: known to have at least one dimension; None: unknown.
    scalar: bool | None = None
    # For `Device.DEFAULT` tensors: the factory call that created the tensor (where `device=` goes).
    origin: cst.Call | None = None
    # The origin factory is inside the `forward()` of a Module class.
    origin_in_forward: bool = False
    # Computed from a tensor parameter of a Module's `forward()` (on the model's device).
    model_input: bool = False
    # Known to require grad (`requires_grad=True`, `nn.Parameter`), not detached since.
    requires_grad: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR

    @property
    def tensor_like(self) -> bool:
        """A tensor, or a value of unknown kind that was moved to a device (`batch.to(device)`):
        only tensors survive arithmetic, so in an op it is a tensor on that device."""
        return self.kind is Kind.TENSOR or (self.kind is Kind.UNKNOWN and self.device is not Device.UNKNOWN)


UNKNOWN_INFO = ValueInfo(Kind.UNKNOWN)
NUMBER_INFO = ValueInfo(Kind.NUMBER)
DEVICE_INFO = ValueInfo(Kind.DEVICE)
MODULE_INFO = ValueInfo(Kind.MODULE)
_TENSOR = ValueInfo(Kind.TENSOR)

# Factories that take sizes and create a new tensor on the default device unless `device=`.
SIZE_FACTORIES = frozenset(
    f"torch.{name}" for name in (
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range",
        "linspace", "logspace", "eye", "empty_strided", "tril_indices", "triu_indices",
        "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
    )
)
# Factories from data: `torch.tensor([1, 2])`; a tensor argument keeps its device.
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.scalar_tensor"})
LIKE_FACTORIES = frozenset(
    f"torch.{name}_like" for name in ("zeros", "ones", "empty", "full", "rand", "randn", "randint")
)
# torch functions in the top-level, functional, linalg, fft and special namespaces that do NOT
# return one tensor (tuples, Python values, context managers, state).
NOT_TENSOR_FUNCTIONS = frozenset(
    {
        "device", "dtype", "Size", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled",
        "autocast", "is_tensor", "is_storage", "is_floating_point", "is_complex", "is_nonzero",
        "is_grad_enabled", "is_inference_mode_enabled", "numel", "manual_seed", "seed", "initial_seed",
        "save", "load", "compile", "finfo", "iinfo", "get_default_dtype", "set_default_dtype",
        "set_default_device", "set_default_tensor_type", "set_printoptions", "set_num_threads",
        "get_num_threads", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
        "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk",
        "kthvalue", "aminmax", "meshgrid",
        "broadcast_tensors", "broadcast_shapes", "unique", "unique_consecutive", "histogram",
        "lu", "qr", "svd", "eig", "slogdet", "std_mean", "var_mean", "frexp", "unravel_index",
        "lstsq", "symeig", "triangular_solve", "geqrf", "cummax", "cummin", "where", "nonzero",
        "equal", "allclose", "result_type", "promote_types", "can_cast", "typename", "vmap",
        "cond", "get_rng_state", "set_rng_state", "from_dlpack", "to_dlpack", "sym_int", "sym_float",
        "multi_head_attention_forward", "max_pool1d_with_indices", "max_pool2d_with_indices",
        "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
        "adaptive_max_pool2d_with_indices", "eigh", "eigvalsh_", "inv_ex", "cholesky_ex",
        "lu_factor", "lu_factor_ex", "ldl_factor", "ldl_factor_ex", "solve_ex", "dropout_",
    }
)
TENSOR_NAMESPACES = ("torch.", "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
# Functions whose result can be a tuple depending on their arguments.
_TUPLE_WHEN_DIM = frozenset({"max", "min", "median", "nanmedian", "mode"})

# Tensor methods and attributes that do not return a single tensor.
_NOT_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "numpy", "size", "dim", "ndimension", "numel", "nelement", "element_size",
        "data_ptr", "stride", "storage", "untyped_storage", "storage_offset", "is_contiguous",
        "is_floating_point", "is_complex", "is_signed", "is_pinned", "is_shared", "is_set_to",
        "get_device", "backward", "register_hook", "register_post_accumulate_grad_hook", "chunk",
        "split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "sort", "topk", "kthvalue",
        "aminmax", "unique", "unique_consecutive", "equal", "allclose", "share_memory_",
        "record_stream", "has_names", "dim_order", "qr", "svd", "eig", "slogdet", "lu",
        "histogram", "frexp", "cummax", "cummin", "nonzero_static", "tolist", "__len__", "keys",
        "values", "items", "get", "dist_", "apply_", "map_", "type", "std_mean", "var_mean",
        "is_leaf", "requires_grad", "names", "layout", "is_cuda", "is_sparse", "is_quantized",
        "is_meta", "is_mps", "nbytes", "itemsize",
    }
)
# Tensor methods returning a number.
NUMBER_METHODS = frozenset({"item", "dim", "ndimension", "numel", "nelement", "element_size", "get_device", "storage_offset"})
_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
_NUMBER_ATTRIBUTES = frozenset({"ndim", "itemsize", "nbytes"})
# Methods that convert only the dtype (device unchanged).
DTYPE_METHODS = frozenset(
    {"float", "half", "double", "bfloat16", "long", "int", "short", "char", "byte", "bool", "cfloat", "cdouble"}
)
# Reductions that give a 0-dim tensor when called without a `dim`.
_FULL_REDUCTIONS = frozenset(
    {"sum", "mean", "prod", "max", "min", "amax", "amin", "norm", "std", "var", "all", "any",
     "median", "nansum", "nanmean", "logsumexp", "count_nonzero", "argmax", "argmin", "trace", "dot"}
)
# Tensor methods that return a tensor on the same device but with new content (not the receiver's data).
_NEW_ON_SAME_DEVICE = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
# Tensor methods that keep the shape (and the device).
_ELEMENTWISE_METHODS = frozenset(
    {"clone", "contiguous", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "neg",
     "sin", "cos", "clamp", "clip", "round", "floor", "ceil", "sign", "square", "pow", "reciprocal",
     "softmax", "log_softmax", "requires_grad_", "pin_memory", "type_as", "masked_fill", "exp2",
     "log1p", "expm1", "log2", "log10", "nan_to_num", "logical_not", "bitwise_not", "trunc", "frac"}
)
# Tensor methods that give a result with at least one dimension from one with at least one.
_KEEP_DIMS_METHODS = frozenset(
    {"view", "reshape", "flatten", "unsqueeze", "expand", "expand_as", "permute", "transpose", "repeat",
     "t", "view_as", "reshape_as", "movedim", "swapaxes", "flip", "roll", "cumsum", "cumprod", "tile",
     "repeat_interleave", "sort", "argsort", "tril", "triu"}
)
# Module methods that return the module itself.
MODULE_FLUENT_METHODS = frozenset(
    {"to", "cuda", "cpu", "xpu", "float", "half", "double", "bfloat16", "eval", "train",
     "requires_grad_", "apply", "to_empty", "type", "share_memory"}
)
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "abs", "ord", "hash"})
_DEVICE_STRINGS = ("cpu", "cuda", "mps", "xpu", "npu", "hpu", "xla", "meta", "ipu", "mtia", "privateuseone")
_TENSOR_ANNOTATIONS = frozenset(
    {"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor", "torch.nn.Parameter",
     "torch.nn.parameter.Parameter"}
)
_NUMBER_ANNOTATIONS = frozenset({"int", "float", "bool", "complex"})
DTYPE_NAMES = frozenset(
    f"torch.{name}" for name in (
        "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int32", "int64",
        "long", "int16", "short", "int8", "uint8", "bool", "complex64", "complex128", "cfloat",
        "cdouble", "float8_e4m3fn", "float8_e5m2",
    )
)


def string_value(expr: cst.BaseExpression) -> str | None:
    """The text of a string literal (for an f-string, its leading literal part), else None."""
    if isinstance(expr, cst.SimpleString):
        text = expr.value
        start = len(text) - len(text.lstrip("rRbBuU"))
        body = text[start:]
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        return body[len(quote):-len(quote)]
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        if isinstance(first, cst.FormattedStringText):
            return first.value
    return None


def device_string_kind(text: str) -> Device | None:
    """`Device.CPU` for "cpu", `Device.ACCELERATOR` for "cuda:0"/"mps", None for other strings."""
    head = text.split(":", 1)[0].strip()
    if head == "cpu":
        return Device.CPU
    if head in _DEVICE_STRINGS:
        return Device.ACCELERATOR
    return None


def _merge_devices(devices: list[Device]) -> Device:
    if Device.ACCELERATOR in devices:
        return Device.ACCELERATOR
    if Device.TARGET in devices:
        return Device.TARGET
    if devices and all(device is Device.DEFAULT for device in devices):
        return Device.DEFAULT
    if devices and all(device in (Device.DEFAULT, Device.CPU) for device in devices):
        return Device.CPU
    return Device.UNKNOWN


class ValueKinds:
    """Answers `info(expr)`; also a walk participant (listed after `ctx.values`)."""

    def __init__(self, ctx: "FileContext") -> None:
        self._ctx = ctx
        self._memo: dict[int, ValueInfo] = {}
        # One entry per enclosing function: True when it is the `forward()` of a Module class.
        self._forward_stack: list[bool] = []
        self._forward_params: set[int] = set()
        self._self_params: set[int] = set()
        self._constants: dict[str, cst.BaseExpression] | None = None
        source = ctx.source
        # Code that changes the default device makes "created without device=" meaningless.
        self._default_device_changed = "set_default_device" in source or "set_default_tensor_type" in source

    # Public API --------------------------------------------------------------------------

    def info(self, expr: cst.BaseExpression) -> ValueInfo:
        key = id(expr)
        found = self._memo.get(key)
        if found is None:
            self._memo[key] = UNKNOWN_INFO  # guards against cycles
            found = self._compute(expr)
            self._memo[key] = found
        return found

    def kind(self, expr: cst.BaseExpression) -> Kind:
        return self.info(expr).kind

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        return self.info(expr).kind is Kind.TENSOR

    def is_module(self, expr: cst.BaseExpression) -> bool:
        return self.info(expr).kind is Kind.MODULE

    def is_number(self, expr: cst.BaseExpression) -> bool:
        return self.info(expr).kind is Kind.NUMBER

    def device_of(self, expr: cst.BaseExpression) -> Device:
        return self.info(expr).device

    def device_value(self, expr: cst.BaseExpression, _depth: int = 0) -> Device | None:
        """Where a device argument (`"cuda"`, `torch.device("cpu")`, `device`, `x.device`) points.

        None when `expr` is not known to be a device (it may be a dtype, or anything).
        """
        if _depth > 4:
            return None
        expr = self.resolve(expr)
        text = string_value(expr)
        if text is not None:
            return device_string_kind(text)
        if isinstance(expr, cst.Integer):
            return Device.ACCELERATOR  # a CUDA ordinal
        if isinstance(expr, cst.Name) and expr.value == "None":
            return Device.DEFAULT
        if isinstance(expr, cst.Call):
            if self._ctx.callee(expr) == "torch.device":
                positional = positional_args(expr)
                kind_arg = positional[0].value if positional else None
                kw = keyword_arg(expr, "type")
                if kw is not None:
                    kind_arg = kw.value
                if kind_arg is not None:
                    found = self.device_value(kind_arg, _depth + 1)
                    if found is not None:
                        return found
                return Device.TARGET
            return None
        if isinstance(expr, cst.IfExp):
            # `"cuda" if torch.cuda.is_available() else "cpu"`: the working device.
            if self.device_value(expr.body, _depth + 1) is not None or self.device_value(expr.orelse, _depth + 1) is not None:
                return Device.ACCELERATOR
            return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            # `t.device` of a tensor whose device is known; any other `.device` is the working device.
            owner = self.info(expr.value)
            if owner.tensor_like and owner.device is not Device.UNKNOWN:
                return owner.device
            return Device.TARGET
        name = expr.value if isinstance(expr, cst.Name) else (
            expr.attr.value if isinstance(expr, cst.Attribute) else None
        )
        if name is not None:
            lowered = name.lower()
            if "device" in lowered or lowered in ("dev", "rank", "local_rank", "gpu", "gpu_id"):
                return Device.TARGET
        return None

    def is_dtype(self, expr: cst.BaseExpression) -> bool:
        """`torch.float32`, `x.dtype`, a name `dtype` or `*_dtype`."""
        expr = self.resolve(expr)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "dtype":
            return True
        if self._ctx.qualified_name(expr) in DTYPE_NAMES:
            return True
        name = expr.value if isinstance(expr, cst.Name) else (
            expr.attr.value if isinstance(expr, cst.Attribute) else None
        )
        return name is not None and "dtype" in name.lower()

    def resolve(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`ctx.values.resolve`, then a module-level constant for a name no local scope binds
        (`mps = torch.device("mps")` at the top of the file, used inside a function)."""
        expr = self._ctx.values.resolve(expr)
        if isinstance(expr, cst.Name) and not self._ctx.values.is_bound(expr.value):
            constant = self._module_constants().get(expr.value)
            if constant is not None:
                return constant
        return expr

    def _module_constants(self) -> dict[str, cst.BaseExpression]:
        """Names assigned exactly once at the top level of the module, with their values."""
        if self._constants is None:
            found: dict[str, cst.BaseExpression | None] = {}
            for statement in self._ctx.module.body:
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, cst.Assign) and len(small.targets) == 1:
                            target = small.targets[0].target
                            if isinstance(target, cst.Name):
                                found[target.value] = None if target.value in found else small.value
            self._constants = {name: value for name, value in found.items() if value is not None}
        return self._constants

    # Walk participation ------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ancestors = self._ctx.ancestors
        classdef = ancestors[-2] if len(ancestors) >= 2 else None
        is_module_method = isinstance(classdef, cst.ClassDef) and self._ctx.module_classes.is_module(classdef)
        is_forward = is_module_method and node.name.value == "forward"
        self._forward_stack.append(is_forward)
        if not is_module_method:
            return
        if any(self._is_static(decorator.decorator) for decorator in node.decorators):
            return
        params = [*node.params.posonly_params, *node.params.params]
        if params:
            self._self_params.add(id(params[0]))
        if is_forward:
            for param in params[1:]:
                self._forward_params.add(id(param))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._forward_stack.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        # Before `ctx.values` binds the targets (this participant leaves first).
        self.info(node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.info(node.value)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.info(node.value)

    # Computation -------------------------------------------------------------------------

    @staticmethod
    def _is_static(decorator: cst.BaseExpression) -> bool:
        return isinstance(decorator, cst.Name) and decorator.value in ("staticmethod", "classmethod")

    def _compute(self, expr: cst.CSTNode) -> ValueInfo:
        if isinstance(expr, cst.Name):
            return self._name(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary(expr)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return UNKNOWN_INFO
            return self.info(expr.expression)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr)
        if isinstance(expr, (cst.Integer, cst.Float)):
            return NUMBER_INFO
        if isinstance(expr, (cst.SimpleString, cst.FormattedString)):
            text = string_value(expr)
            return DEVICE_INFO if text is not None and device_string_kind(text) is not None else UNKNOWN_INFO
        if isinstance(expr, cst.Param):
            return self._param(expr)
        if isinstance(expr, cst.IfExp):
            return self._either(self.info(expr.body), self.info(expr.orelse))
        if isinstance(expr, cst.NamedExpr):
            return self.info(expr.value)
        return UNKNOWN_INFO

    def _either(self, first: ValueInfo, second: ValueInfo) -> ValueInfo:
        if first == second:
            return first
        if first.kind is not second.kind:
            return UNKNOWN_INFO
        if first.kind is not Kind.TENSOR:
            return ValueInfo(first.kind)
        return ValueInfo(
            Kind.TENSOR,
            device=first.device if first.device is second.device else Device.UNKNOWN,
            scalar=first.scalar if first.scalar == second.scalar else None,
            model_input=first.model_input and second.model_input,
            requires_grad=first.requires_grad and second.requires_grad,
        )

    def _name(self, node: cst.Name) -> ValueInfo:
        if node.value in ("True", "False"):
            return NUMBER_INFO
        value = self._ctx.values.value_of(node.value)
        if value is None:
            return UNKNOWN_INFO
        return self.info(value)

    def _param(self, param: cst.Param) -> ValueInfo:
        if id(param) in self._self_params:
            return MODULE_INFO
        annotation = param.annotation.annotation if param.annotation is not None else None
        if annotation is not None:
            qualified = self._ctx.qualified_name(annotation)
            if qualified in _TENSOR_ANNOTATIONS:
                return ValueInfo(Kind.TENSOR, model_input=id(param) in self._forward_params)
            if isinstance(annotation, cst.Name) and annotation.value in _NUMBER_ANNOTATIONS:
                return NUMBER_INFO
            return UNKNOWN_INFO
        if id(param) in self._forward_params and param.default is None and param.star == "":
            return ValueInfo(Kind.TENSOR, model_input=True)
        return UNKNOWN_INFO

    def _in_forward(self) -> bool:
        return bool(self._forward_stack) and self._forward_stack[-1]

    # Calls -------------------------------------------------------------------------------

    def _call(self, call: cst.Call) -> ValueInfo:
        func = call.func
        if isinstance(func, cst.Attribute):
            receiver = func.value
            # Cheap syntactic check first: `torch.zeros` has a dotted receiver that is imported.
            qualified = self._ctx.callee(call)
            if qualified is not None:
                return self._qualified_call(call, qualified)
            return self._method(call, func.attr.value, receiver)
        if isinstance(func, cst.Name):
            qualified = self._ctx.callee(call)
            if qualified is not None:
                return self._qualified_call(call, qualified)
            name = func.value
            if name in _NUMBER_BUILTINS:
                return NUMBER_INFO
            if self._ctx.module_classes.is_module_name(name) and self._ctx.values.value_of(name) is None:
                return MODULE_INFO
            if self._is_loss_module(self.resolve(func)):
                return _TENSOR  # `criterion = nn.CrossEntropyLoss()` ... `criterion(out, y)`
        return UNKNOWN_INFO

    def _is_loss_module(self, value: cst.CSTNode) -> bool:
        """A `torch.nn` loss module constructed here: calling it returns a tensor."""
        if not isinstance(value, cst.Call):
            return False
        qualified = self._ctx.callee(value)
        return qualified is not None and qualified.startswith("torch.nn.") and qualified.endswith("Loss")

    def _qualified_call(self, call: cst.Call, qualified: str) -> ValueInfo:
        if qualified in SIZE_FACTORIES or qualified in DATA_FACTORIES or qualified in LEGACY_CONSTRUCTORS:
            return self._factory(call, qualified)
        if qualified in LIKE_FACTORIES:
            positional = positional_args(call)
            source = self.info(positional[0].value) if positional else UNKNOWN_INFO
            device = self._explicit_device(call)
            return ValueInfo(
                Kind.TENSOR,
                device=device if device is not None else source.device,
                scalar=source.scalar,
                origin=None if device is not None else source.origin,
                origin_in_forward=source.origin_in_forward,
                requires_grad=self._requires_grad_kwarg(call),
            )
        if qualified == "torch.from_numpy":
            return self._on_default_device(call, scalar=False)
        if qualified in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            positional = positional_args(call)
            data = self.info(positional[0].value) if positional else UNKNOWN_INFO
            flag = keyword_arg(call, "requires_grad")
            grad = flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "False")
            return replace(data, kind=Kind.TENSOR, requires_grad=grad) if data.is_tensor else ValueInfo(
                Kind.TENSOR, requires_grad=grad
            )
        if qualified == "torch.device":
            return DEVICE_INFO
        if qualified.startswith("math.") or qualified in ("builtins.len", "numpy.prod"):
            return NUMBER_INFO
        if is_torch_module_class(qualified) or (
            qualified.startswith("torchvision.models.") and qualified.rsplit(".", 1)[-1][:1].islower()
        ):
            return MODULE_INFO
        for namespace in TENSOR_NAMESPACES:
            if qualified.startswith(namespace):
                rest = qualified[len(namespace):]
                if "." in rest or not rest[:1].islower() or rest.startswith("_") or rest in NOT_TENSOR_FUNCTIONS:
                    continue
                return self._torch_op(call, rest)
        return UNKNOWN_INFO

    def _torch_op(self, call: cst.Call, name: str) -> ValueInfo:
        """`torch.cat([...])`, `F.relu(x)`: a tensor on the device its tensor arguments share."""
        if name in _TUPLE_WHEN_DIM and len(call.args) > 1:
            return UNKNOWN_INFO
        operands: list[ValueInfo] = []
        for arg in call.args:
            if arg.keyword is not None or arg.star:
                continue
            value = arg.value
            if isinstance(value, (cst.List, cst.Tuple)):
                operands.extend(self.info(element.value) for element in value.elements)
            else:
                operands.append(self.info(value))
        return self._combine(operands)

    def _combine(self, operands: list[ValueInfo]) -> ValueInfo:
        """The result of an op on these operands, assuming the op succeeds.

        A non-0-dim tensor on the default device puts a successful result there too (whatever
        the unknown operands are); a tensor on the accelerator makes the result an accelerator
        tensor (the mixed case is what TL301 reports, once, at its origin).
        """
        tensors = [info for info in operands if info.tensor_like]
        if not tensors:
            return _TENSOR
        unknown_operand = any(not info.tensor_like and info.kind is not Kind.NUMBER for info in operands)
        if any(info.device.is_placed for info in tensors):
            device = _merge_devices([info.device for info in tensors if info.device.is_placed])
        elif any(info.model_input and info.device is Device.UNKNOWN for info in tensors):
            device = Device.UNKNOWN  # a forward() input: most likely on the accelerator
        elif any(info.device is Device.DEFAULT and info.scalar is False for info in tensors):
            device = Device.DEFAULT
        elif unknown_operand:
            device = Device.UNKNOWN
        else:
            devices = [info.device for info in tensors if info.scalar is not True]
            device = _merge_devices(devices or [info.device for info in tensors])
        origin_info = next((info for info in tensors if info.origin is not None and info.scalar is False), None)
        if origin_info is None:
            origin_info = next((info for info in tensors if info.origin is not None), None)
        scalars = [info.scalar for info in tensors]
        scalar = False if False in scalars else (True if all(scalars) and not unknown_operand else None)
        return ValueInfo(
            Kind.TENSOR,
            device=device,
            scalar=scalar,
            origin=origin_info.origin if device is Device.DEFAULT and origin_info is not None else None,
            origin_in_forward=device is Device.DEFAULT and origin_info is not None and origin_info.origin_in_forward,
            model_input=any(info.model_input for info in tensors),
            requires_grad=any(info.requires_grad for info in tensors) and not self._under_no_grad(),
        )

    def _explicit_device(self, call: cst.Call) -> Device | None:
        """The device a factory's `device=` names (UNKNOWN when it names something unknowable)."""
        arg = keyword_arg(call, "device")
        if arg is None:
            # `torch.eye(n, **factory_kwargs)` may pass a device.
            return Device.UNKNOWN if any(a.star == "**" for a in call.args) else None
        found = self.device_value(arg.value)
        return Device.UNKNOWN if found is None else found

    def _requires_grad_kwarg(self, call: cst.Call) -> bool:
        arg = keyword_arg(call, "requires_grad")
        return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True"

    def _factory(self, call: cst.Call, qualified: str) -> ValueInfo:
        device = self._explicit_device(call)
        positional = positional_args(call)
        scalar: bool | None = False
        if qualified in DATA_FACTORIES:
            data = positional[0].value if positional else None
            if qualified == "torch.scalar_tensor":
                scalar = True
            elif data is None:
                return ValueInfo(Kind.TENSOR, device=device or Device.UNKNOWN)
            else:
                resolved = self._ctx.values.resolve(data)
                if isinstance(resolved, (cst.List, cst.Tuple, cst.ListComp)):
                    scalar = False
                else:
                    data_info = self.info(data)
                    if data_info.kind is Kind.NUMBER:
                        scalar = True
                    elif data_info.kind is Kind.TENSOR and device is None:
                        # The result keeps the data's device.
                        return replace(data_info, requires_grad=self._requires_grad_kwarg(call))
                    else:
                        return ValueInfo(Kind.TENSOR, device=device or Device.UNKNOWN)
        elif qualified in SIZE_FACTORIES and len(positional) == 1:
            only = positional[0].value
            if isinstance(only, (cst.Tuple, cst.List)) and not only.elements:
                scalar = True
        elif qualified in LEGACY_CONSTRUCTORS and not positional:
            scalar = None
        if device is not None:
            return ValueInfo(Kind.TENSOR, device=device, scalar=scalar, requires_grad=self._requires_grad_kwarg(call))
        return self._on_default_device(call, scalar=scalar)

    def _on_default_device(self, call: cst.Call, scalar: bool | None) -> ValueInfo:
        grad = self._requires_grad_kwarg(call)
        if self._default_device_changed or self._under_device_context():
            return ValueInfo(Kind.TENSOR, scalar=scalar, requires_grad=grad)
        return ValueInfo(
            Kind.TENSOR, device=Device.DEFAULT, scalar=scalar, origin=call,
            origin_in_forward=self._in_forward(), requires_grad=grad,
        )

    def _under_device_context(self) -> bool:
        """Inside `with torch.device(...):` (factories follow it)."""
        for node in self._ctx.ancestors:
            if isinstance(node, cst.With):
                for item in node.items:
                    if isinstance(item.item, cst.Call) and self._ctx.callee(item.item) == "torch.device":
                        return True
        return False

    def _under_no_grad(self) -> bool:
        for node in self._ctx.ancestors:
            if isinstance(node, cst.With):
                for item in node.items:
                    target = item.item.func if isinstance(item.item, cst.Call) else item.item
                    if self._ctx.qualified_name(target) in ("torch.no_grad", "torch.inference_mode"):
                        return True
        return False

    # Methods -----------------------------------------------------------------------------

    def _method(self, call: cst.Call, name: str, receiver: cst.BaseExpression) -> ValueInfo:
        receiver_info = self.info(receiver)
        kind = receiver_info.kind
        if kind is Kind.MODULE:
            return MODULE_INFO if name in MODULE_FLUENT_METHODS else UNKNOWN_INFO
        if kind is not Kind.TENSOR:
            if kind is Kind.UNKNOWN and name in ("cuda", "cpu", "to"):
                # Moved somewhere, kind still unknown (it may be a module or a batch object).
                moved = self._to(call, UNKNOWN_INFO) if name == "to" else ValueInfo(
                    Kind.UNKNOWN, device=Device.ACCELERATOR if name == "cuda" else Device.CPU
                )
                return ValueInfo(Kind.UNKNOWN, device=moved.device)
            if receiver_info.tensor_like and (
                name in DTYPE_METHODS or name in _ELEMENTWISE_METHODS or name in _KEEP_DIMS_METHODS
            ):
                return ValueInfo(Kind.UNKNOWN, device=receiver_info.device)
            return UNKNOWN_INFO
        if receiver_info.requires_grad and name not in ("requires_grad_",) and self._under_no_grad():
            receiver_info = replace(receiver_info, requires_grad=False)
        if name in NUMBER_METHODS:
            return NUMBER_INFO
        if name == "size":
            return NUMBER_INFO if call.args else UNKNOWN_INFO
        if name in _NOT_TENSOR_METHODS:
            if name == "type" and call.args:
                return replace(receiver_info, requires_grad=False)
            return UNKNOWN_INFO
        if name in _TUPLE_WHEN_DIM and call.args:
            first = call.args[0]
            if first.keyword is not None or self.info(first.value).kind is not Kind.TENSOR:
                return UNKNOWN_INFO
        if name in ("detach", "detach_"):
            return replace(receiver_info, requires_grad=False)
        if name == "requires_grad_":
            flag = call.args[0].value if call.args else None
            off = isinstance(flag, cst.Name) and flag.value == "False"
            return replace(receiver_info, requires_grad=not off)
        if name == "cuda":
            return self._moved(receiver_info, Device.ACCELERATOR)
        if name == "cpu":
            return self._moved(receiver_info, Device.CPU)
        if name == "to":
            return self._to(call, receiver_info)
        if name in _NEW_ON_SAME_DEVICE:
            return ValueInfo(
                Kind.TENSOR, device=receiver_info.device, origin=receiver_info.origin,
                origin_in_forward=receiver_info.origin_in_forward, model_input=receiver_info.model_input,
                scalar=True if name == "new_tensor" and call.args and self.is_number(call.args[0].value) else None,
            )
        if name in _FULL_REDUCTIONS:
            has_dim = any(arg.keyword is None or arg.keyword.value == "dim" for arg in call.args)
            scalar = None if has_dim else True
            return replace(receiver_info, scalar=scalar)
        # Elementwise, shape and dtype methods keep the device; others we cannot tell 0-dim of.
        operands = [receiver_info]
        for arg in call.args:
            if arg.keyword is None and not arg.star:
                info = self.info(arg.value)
                if info.kind is Kind.TENSOR:
                    operands.append(info)
        if len(operands) > 1:
            return self._combine(operands)
        if name in DTYPE_METHODS or name in _ELEMENTWISE_METHODS or name.endswith("_"):
            return receiver_info
        keeps_dims = receiver_info.scalar is False and name in _KEEP_DIMS_METHODS
        return replace(receiver_info, scalar=False if keeps_dims else None)

    def _moved(self, info: ValueInfo, device: Device) -> ValueInfo:
        return replace(info, device=device, origin=None, origin_in_forward=False)

    def _to(self, call: cst.Call, receiver: ValueInfo) -> ValueInfo:
        """`t.to(device)`, `t.to(dtype)`, `t.to(other)`, `t.to(device, dtype)`, `t.to(device=...)`."""
        target: Device | None = None
        unknown = False
        for arg in call.args:
            if arg.star:
                unknown = True
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword in ("dtype", "non_blocking", "copy", "memory_format"):
                continue
            if keyword not in (None, "device", "other"):
                unknown = True
                continue
            value_info = self.info(arg.value)
            if value_info.kind is Kind.TENSOR:
                target = value_info.device
                continue
            if keyword != "device" and self.is_dtype(arg.value):
                continue
            found = self.device_value(arg.value)
            if found is None or found is Device.DEFAULT:
                if keyword == "device" or not self.is_dtype(arg.value):
                    unknown = True
                continue
            target = found
        if target is not None:
            return self._moved(receiver, target)
        if unknown:
            return self._moved(receiver, Device.UNKNOWN)
        return receiver

    # Other expressions -------------------------------------------------------------------

    def _attribute(self, node: cst.Attribute) -> ValueInfo:
        attr = node.attr.value
        if attr == "device":
            return DEVICE_INFO
        qualified = self._ctx.qualified_name(node)
        if qualified is not None:
            if qualified.startswith("math.") and qualified.rsplit(".", 1)[-1] in ("pi", "e", "inf", "nan", "tau"):
                return NUMBER_INFO
            return UNKNOWN_INFO
        if attr not in _TENSOR_ATTRIBUTES and attr not in _NUMBER_ATTRIBUTES:
            return UNKNOWN_INFO
        receiver = self.info(node.value)
        if receiver.kind is not Kind.TENSOR:
            return UNKNOWN_INFO
        if attr in _NUMBER_ATTRIBUTES:
            return NUMBER_INFO
        if attr == "data":
            return replace(receiver, requires_grad=False)
        return receiver

    def _binary(self, node: cst.BinaryOperation) -> ValueInfo:
        left = self.info(node.left)
        right = self.info(node.right)
        if left.kind is Kind.NUMBER and right.kind is Kind.NUMBER:
            return NUMBER_INFO
        if left.tensor_like or right.tensor_like:
            if isinstance(node.operator, cst.Modulo) and not left.tensor_like:
                return UNKNOWN_INFO  # "%s" % t
            return self._combine([left, right])
        return UNKNOWN_INFO

    def _subscript(self, node: cst.Subscript) -> ValueInfo:
        receiver = self.info(node.value)
        if receiver.kind is not Kind.TENSOR:
            if isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape":
                if self.info(node.value.value).kind is Kind.TENSOR:
                    return NUMBER_INFO
            return UNKNOWN_INFO
        only_slices = all(
            isinstance(element.slice, cst.Slice)
            or (isinstance(element.slice, cst.Index) and isinstance(element.slice.value, (cst.Ellipsis, cst.Name))
                and getattr(element.slice.value, "value", "None") == "None")
            for element in node.slice
        )
        # Indexing with a tensor keeps the receiver's device; an integer index may give a 0-dim tensor.
        return replace(receiver, scalar=receiver.scalar if only_slices else None)
