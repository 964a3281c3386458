"""What kind of value an expression holds, asked via `ctx.kinds`: a facade over the tensor facts.

`ctx.kinds` answers the questions many rules share (is it a tensor, a module, a number; where
does a tensor live) from `ctx.tensors` (`analysis/tensor_facts/`), the one flow-sensitive model
of what is known about the values of a function, so that every rule sees the same facts:

    self.ctx.kinds.is_tensor(expr)            # known to be a tensor (never a module, never unknown)
    self.ctx.kinds.is_module(expr)            # nn.Module instance: `nn.Linear(...)`, `Net()`, `self`
    self.ctx.kinds.is_number(expr)            # Python number: literals, len(), .item(), float(t)
    self.ctx.kinds.tensor(expr)               # the TensorFacts of a tensor (also of a value of
                                              # unknown kind moved like one), else None
    self.ctx.kinds.is_dtype(arg)              # torch.float32, x.dtype, a `dtype` name
    self.ctx.kinds.resolve(expr)              # ctx.values.resolve + module-level constants
    self.ctx.kinds.assigned(expr)             # resolve, and `self.<name>` to what its class assigns

The module also holds the tables of torch factories and namespaces the tensor facts read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.tensor_facts.domain import Device, ModuleValue, Number, TensorFacts
from torchlint.analysis.whole_numbers import WholeNumbers

if TYPE_CHECKING:
    from torchlint.analysis.checked_file import CheckedFile


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

# Module methods that return the module itself.
MODULE_FLUENT_METHODS = frozenset(
    {"to", "cuda", "cpu", "xpu", "float", "half", "double", "bfloat16", "eval", "train",
     "requires_grad_", "apply", "to_empty", "type", "share_memory"}
)
_DEVICE_STRINGS = ("cpu", "cuda", "mps", "xpu", "npu", "hpu", "xla", "meta", "ipu", "mtia", "privateuseone")
# Every dtype torch 2.13 defines: `x.view(torch.float8_e8m0fnu)` reinterprets bytes, no shape.
DTYPE_NAMES = frozenset(
    f"torch.{name}" for name in (
        "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int32", "int64",
        "long", "int16", "short", "int8", "uint8", "uint16", "uint32", "uint64", "bool", "complex32",
        "complex64", "complex128", "chalf", "cfloat", "cdouble", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "qint32",
        "quint8", "quint4x2", "quint2x4", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "bit",
        *(f"int{width}" for width in range(1, 8)), *(f"uint{width}" for width in range(1, 8)),
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


def names_cpu(expr: cst.BaseExpression) -> bool:
    """`"cpu"`, `"cpu:0"`, `torch.device("cpu")`: a device written as the CPU."""
    if isinstance(expr, cst.SimpleString):
        return expr.value.strip("'\"").split(":")[0] == "cpu"
    if isinstance(expr, cst.Call) and expr.args and isinstance(expr.args[0].value, cst.SimpleString):
        return names_cpu(expr.args[0].value)
    return False


def device_string_kind(text: str) -> Device | None:
    """`Device.CPU` for "cpu", `Device.ACCELERATOR` for "cuda:0"/"mps", None for other strings."""
    head = text.split(":", 1)[0].strip()
    if head == "cpu":
        return Device.CPU
    if head in _DEVICE_STRINGS:
        return Device.ACCELERATOR
    return None


class ValueKinds:
    """Answers what kind of value an expression holds, from `ctx.tensors`."""

    def __init__(self, ctx: "CheckedFile") -> None:
        self._ctx = ctx
        self._constants: dict[str, cst.BaseExpression] | None = None
        self._whole_numbers = WholeNumbers(ctx)

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        return self._ctx.tensors.is_tensor(expr)

    def is_module(self, expr: cst.BaseExpression) -> bool:
        return isinstance(self._ctx.tensors.facts(expr), ModuleValue)

    def is_number(self, expr: cst.BaseExpression) -> bool:
        return isinstance(self._ctx.tensors.facts(expr), Number)

    def tensor(self, expr: cst.BaseExpression) -> TensorFacts | None:
        """What is known of a tensor, or of a value of unknown kind moved like one
        (`batch.to(device)`: only tensors survive arithmetic, so in an op it is a tensor there)."""
        value = self._ctx.tensors.facts(expr)
        return value if isinstance(value, TensorFacts) else None

    def holds_whole_numbers(self, expr: cst.BaseExpression) -> bool:
        """The value holds whole numbers whatever its dtype (a degree, a count, `torch.arange(n)`,
        `x.long()`, sums and products of those), so `x + 1` is exact (`analysis/whole_numbers.py`)."""
        return self._whole_numbers.holds(expr)

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

    def assigned(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """`resolve`, and for `self.<name>` the one expression its class assigns it (`expr` itself
        when that is not one known expression)."""
        if isinstance(expr, cst.Attribute):
            value = self._ctx.self_attributes.value_of(expr)
            return expr if value is None else value
        return self.resolve(expr)

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
