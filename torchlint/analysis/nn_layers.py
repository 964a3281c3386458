"""Which `torch.nn` constructors build a layer that owns parameters (or running statistics).

Parameter-free modules (`nn.ReLU`, `nn.Dropout`, `nn.Identity`, pooling, losses...) can be built
anywhere, even inside `forward`; a layer with parameters built there is re-initialised on every
call and never reaches the optimizer.
"""

from __future__ import annotations

import builtins

import libcst as cst

from torchlint.analysis.names import keyword_arg, method_named
from torchlint.walker import nodes_in_order

_ALWAYS_PARAMETERIZED = frozenset(
    {
        "Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag", "PReLU",
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
        "LazyConv1d", "LazyConv2d", "LazyConv3d",
        "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
        "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
        "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer",
        "AdaptiveLogSoftmaxWithLoss",
    }
)
# Parameters (and running statistics) unless switched off by these keywords.
_AFFINE = {
    "LayerNorm": ("elementwise_affine",),
    "RMSNorm": ("elementwise_affine",),
    "GroupNorm": ("affine",),
    **{
        name: ("affine", "track_running_stats")
        for name in (
            "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm",
            "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
        )
    },
}
# Off by default: stateful only when one of these keywords is True.
_OPT_IN = {
    name: ("affine", "track_running_stats")
    for name in (
        "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
        "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    )
}
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def nn_class_name(qualified: str | None) -> str | None:
    """`Linear` for `torch.nn.Linear` / `torch.nn.modules.linear.Linear`; None otherwise."""
    if not qualified or not qualified.startswith("torch.nn."):
        return None
    name = qualified.rsplit(".", 1)[-1]
    rest = qualified[len("torch.nn."):]
    if rest != name and not rest.startswith("modules."):
        return None
    return name if name[:1].isupper() else None


def _is_false(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _is_true(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def parameterized_layer(ctx, call: cst.Call) -> str | None:
    """The class name when `call` builds a `torch.nn` layer that owns parameters or statistics."""
    name = nn_class_name(ctx.callee(call))
    if name is None:
        return None
    if name in _ALWAYS_PARAMETERIZED:
        return name
    if name in _AFFINE:
        switches = [keyword_arg(call, keyword) for keyword in _AFFINE[name]]
        return None if all(s is not None and _is_false(s.value) for s in switches) else name
    if name in _OPT_IN:
        switches = [keyword_arg(call, keyword) for keyword in _OPT_IN[name]]
        return name if any(s is not None and _is_true(s.value) for s in switches) else None
    return None


# Libraries whose Module classes hold no learnable parameters: signal and image transforms.
_PARAMETER_FREE_LIBRARIES = ("torchaudio.transforms.", "torchvision.transforms.")
_BUILTINS = frozenset(dir(builtins))


def parameter_free_class(ctx, classdef: cst.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
    """A Module class of this file, derived from `nn.Module` itself, whose `__init__` builds
    nothing that owns parameters: no `nn.Parameter`, no `torch.nn` layer with parameters, no
    class of unknown content, only parameter-free layers, torchaudio/torchvision transforms and
    parameter-free classes of this file (`self.resampler = torchaudio.transforms.Resample(...)`)."""
    if classdef.name.value in seen or not all(
        ctx.qualified_name(base.value) == "torch.nn.Module" for base in classdef.bases
    ):
        return False
    init = method_named(classdef, "__init__")
    calls = [node for node in nodes_in_order(init.body) if isinstance(node, cst.Call)] if init else []
    return all(_builds_no_parameters(ctx, call, seen | {classdef.name.value}) for call in calls)


def _builds_no_parameters(ctx, call: cst.Call, seen: frozenset[str]) -> bool:
    qualified = ctx.callee(call)
    if qualified is not None:
        if qualified.startswith(_PARAMETER_FREE_LIBRARIES):
            return True
        if nn_class_name(qualified) is not None:
            return parameterized_layer(ctx, call) is None and not qualified.endswith(".Parameter")
        return qualified.startswith(("torch.", "math.")) and qualified.rsplit(".", 1)[-1][:1].islower()
    func = call.func
    if isinstance(func, cst.Attribute):
        # A method of something built here (`layers.append(...)`), or `super().__init__()`; not `self.register_parameter`.
        return func.attr.value != "register_parameter"
    if isinstance(func, cst.Name):
        local = ctx.module_classes.class_named(func.value)
        if local is not None:
            return parameter_free_class(ctx, local, seen)
        return func.value in _BUILTINS
    return False
