"""Tensor factories and dtypes: what a `torch.<factory>(...)` call creates, read from its arguments."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import keyword_arg

# Functions of the `torch` namespace that create a new tensor.
TENSOR_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "rand", "randn",
        "randint", "randperm", "arange", "range", "linspace", "logspace", "eye", "normal",
        "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
        "randint_like", "empty_strided", "tril_indices", "triu_indices", "bernoulli", "multinomial",
    )
)
INTEGER_DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "uint16", "uint32",
        "uint64", "bool",
    )
)
# The legacy constructors `torch.<Name>(...)` and the dtype their data gets (None: the default dtype).
LEGACY_CONSTRUCTOR_DTYPES = {
    "Tensor": None, "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16",
    "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}
LEGACY_CONSTRUCTORS = frozenset(f"torch.{name}" for name in LEGACY_CONSTRUCTOR_DTYPES)
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def requires_grad_true(call: cst.Call) -> bool:
    arg = keyword_arg(call, "requires_grad")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True"


def dtype_kind(ctx, call: cst.Call) -> str | None:
    """'integer', 'float' or None (no `dtype=`, or one that cannot be read) for a factory call."""
    arg = keyword_arg(call, "dtype")
    if arg is None:
        return None
    value = arg.value
    if isinstance(value, cst.Name) and value.value in ("int", "bool") and ctx.qualified_name(value) is None:
        return "integer"
    if isinstance(value, cst.Name) and value.value == "float" and ctx.qualified_name(value) is None:
        return "float"
    qualified = ctx.qualified_name(value)
    if qualified is None or not qualified.startswith("torch."):
        return None
    if qualified in INTEGER_DTYPES:
        return "integer"
    last = qualified.rsplit(".", 1)[-1]
    if last in ("float", "double", "half", "bfloat16", "cfloat", "cdouble") or last.startswith(("float", "complex")):
        return "float"
    return None


def integer_literal(expr: cst.BaseExpression) -> bool:
    """An int or bool literal, or a (nested) list/tuple made only of them (`[1, -2]`, `True`)."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return isinstance(expr.expression, cst.Integer)
    if isinstance(expr, (cst.List, cst.Tuple)):
        elements = expr.elements
        return bool(elements) and all(
            isinstance(e, cst.Element) and integer_literal(e.value) for e in elements
        )
    return False
