"""Facts about the torch API shared by rules: which qualified names mean the same function."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import method_name

SOFTMAX_FUNCTIONS = frozenset(
    {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
)
SIGMOID_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid"}
)
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log"})


def call_matches(ctx, call: cst.Call, functions: frozenset[str], method: str | None) -> bool:
    """`call` is one of `functions` (through the imports) or the tensor method `method`."""
    qualified = ctx.callee(call)
    if qualified is not None:
        return qualified in functions
    return method is not None and method_name(call) == method


def torch_module_name(ctx) -> str | None:
    """A local name bound to the `torch` module, for code that a fix inserts."""
    names = ctx.imports.local_names_for("torch")
    return "torch" if "torch" in names else (names[0] if names else None)


def functional_module_name(ctx) -> str | None:
    """A local expression for `torch.nn.functional` usable in inserted code."""
    names = ctx.imports.local_names_for("torch.nn.functional")
    if names:
        return "F" if "F" in names else names[0]
    torch_name = torch_module_name(ctx)
    return f"{torch_name}.nn.functional" if torch_name else None
