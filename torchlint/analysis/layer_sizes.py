"""Feature sizes that `torch.nn` layers expect and give, and chains of layers that cannot fit.

A layer built with literal sizes (`nn.Linear(128, 256)`, `nn.Conv2d(3, 64, 3)`) says how many
features its input must have and how many its output has. Chaining two such layers, in an
`nn.Sequential(...)` or in `forward` (`x = self.a(x); x = self.b(x)`, `self.b(self.a(x))`), must
match them; a mismatch is PyTorch's "mat1 and mat2 shapes cannot be multiplied" (or "expected
input ... to have 64 channels") on the first batch.

Sizes live on one of two axes: the LAST dimension (what `Linear`, `LSTM`, `LayerNorm` read and
`Linear`, `Embedding`, `LSTM` write) or the CHANNEL dimension 1 (what convolutions and batch norm
read and write). A size is compared only where the two layers meet on the same axis; activations,
dropout and norms keep every size, pooling and padding keep only the channels, and anything else
(an unknown module, a size from a variable) ends what is known.

When the input's whole shape is known (a literal batch fed to the model, an annotation, an
`example_input_array`, see `model_inputs.py`), it is followed too: each layer kind maps a shape to
a shape (`_windowed` for convolutions and pooling from the `_WINDOWS` table of where each kind
takes its kernel, stride, padding, dilation and ceil_mode; `_adaptive`; `flattened`), so
`Flatten()` gives a known size (`64*5*5 = 1600`) that the next `Linear` must expect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable

import libcst as cst

from torchlint.analysis.layouts import int_value, shape_args
from torchlint.analysis.names import argument, dotted_name, keyword_arg, positional_args, suite_statements
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.values import string_value

LAST = "last"
CHANNEL = "channel"
_BOTH = frozenset({LAST, CHANNEL})

_KEEP_ALL = frozenset(
    "ReLU ReLU6 LeakyReLU PReLU RReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Hardtanh Hardswish "
    "Hardsigmoid Hardshrink Softshrink Softplus Softsign Softmax Softmax2d LogSoftmax Softmin Tanhshrink "
    "Threshold LogSigmoid Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout "
    "Identity InstanceNorm1d InstanceNorm2d InstanceNorm3d LocalResponseNorm".split()
)
_KEEP_CHANNELS = frozenset(
    "MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
    "AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d "
    "FractionalMaxPool2d FractionalMaxPool3d Upsample UpsamplingNearest2d UpsamplingBilinear2d "
    "ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
    "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d CircularPad1d "
    "CircularPad2d CircularPad3d".split()
)
_CONVOLUTIONS = frozenset(
    "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d".split()
)
_RECURRENT = frozenset({"RNN", "LSTM", "GRU"})
_BATCH_NORMS = {"BatchNorm1d": _BOTH, "BatchNorm2d": frozenset({CHANNEL}), "BatchNorm3d": frozenset({CHANNEL}),
                "SyncBatchNorm": frozenset({CHANNEL})}
# Keep-size activations in the functional and tensor-method forms (`F.relu(x)`, `x.relu()`).
_KEEP_FUNCTIONS = frozenset(
    f"torch.nn.functional.{name}" for name in
    "relu relu6 gelu silu mish elu selu celu leaky_relu sigmoid tanh hardswish softplus dropout "
    "softmax log_softmax".split()
) | frozenset({"torch.relu", "torch.sigmoid", "torch.tanh", "torch.dropout"})
_KEEP_METHODS = frozenset({"relu", "sigmoid", "tanh", "contiguous", "float", "half", "to"})

# A tensor's sizes, batch first; None where a size is unknown.
Shape = tuple[int | None, ...]

# Where the layers that slide a window over the spatial dims take its arguments: (position,
# keyword) of kernel, stride, padding, dilation, ceil_mode and output_padding (None: the layer has
# no such argument).
_CONV_WINDOW = ((2, "kernel_size"), (3, "stride"), (4, "padding"), (5, "dilation"), None, None)
_CONV_TRANSPOSE_WINDOW = ((2, "kernel_size"), (3, "stride"), (4, "padding"), (8, "dilation"), None,
                          (5, "output_padding"))
_MAX_POOL_WINDOW = ((0, "kernel_size"), (1, "stride"), (2, "padding"), (3, "dilation"), (5, "ceil_mode"), None)
_AVG_POOL_WINDOW = ((0, "kernel_size"), (1, "stride"), (2, "padding"), None, (3, "ceil_mode"), None)
# Layer kind -> (number of spatial dims, window arguments).
_WINDOWS = {
    **{f"Conv{n}d": (n, _CONV_WINDOW) for n in (1, 2, 3)},
    **{f"ConvTranspose{n}d": (n, _CONV_TRANSPOSE_WINDOW) for n in (1, 2, 3)},
    **{f"MaxPool{n}d": (n, _MAX_POOL_WINDOW) for n in (1, 2, 3)},
    **{f"AvgPool{n}d": (n, _AVG_POOL_WINDOW) for n in (1, 2, 3)},
}
# Layer kind -> number of spatial dims it resizes to its `output_size`.
_ADAPTIVE = {f"Adaptive{kind}Pool{n}d": n for kind in ("Avg", "Max") for n in (1, 2, 3)}
# `torch.nn.functional` pooling: the layer kind it computes (its window arguments come one later).
FUNCTIONAL_POOLING = {
    **{f"torch.nn.functional.{kind.lower()}_pool{n}d": f"{kind}Pool{n}d" for kind in ("Max", "Avg") for n in (1, 2, 3)},
    **{f"torch.nn.functional.adaptive_{kind.lower()}_pool{n}d": f"Adaptive{kind}Pool{n}d"
       for kind in ("Max", "Avg") for n in (1, 2, 3)},
}


@dataclass(frozen=True)
class Features:
    """A known feature size of a tensor, on `axes`, written by the layer built at `source`."""

    size: int
    axes: frozenset[str]
    source: cst.CSTNode
    note: str = ""
    # An RNN's output, of rank 3: indexing its first two dims keeps the features (`out[:, -1]`).
    sequence: bool = False
    # The whole shape, where a known input was followed to here, and that input.
    shape: Shape | None = None
    origin: Input | None = None
    # How a flattened size was computed from the shape (`64*5*5`).
    formula: str = ""


@dataclass(frozen=True)
class Input:
    """A known input of a model: `node` (a literal batch, an annotation...) gives it `shape`."""

    node: cst.CSTNode
    shape: Shape

    def features(self) -> Features:
        """The input as the first layer sees it: its feature size is checked only where the last
        dim is also dim 1 (rank 2); otherwise only its shape is followed."""
        axes = _BOTH if len(self.shape) == 2 else frozenset()
        return Features(self.shape[-1], axes, self.node, shape=self.shape, origin=self)


@dataclass(frozen=True)
class Layer:
    """What one layer does to the feature sizes.

    `keeps`: the axes whose size passes through unchanged. `expects`: the input size it needs, on
    `reads` axes. `gives`: the output size (None: unknown, or the input's when it keeps it).
    """

    name: str
    keeps: frozenset[str] = frozenset()
    expects: int | None = None
    reads: frozenset[str] = frozenset()
    gives: int | None = None
    gives_axes: frozenset[str] = frozenset()
    note: str = ""
    # An RNN returns (output, hidden): only the first item carries `gives`.
    returns_pair: bool = False
    # What the layer does to a whole shape (None: the shape is no longer known).
    reshape: Callable[[Shape], Shape | None] | None = None
    # `Flatten`'s (start_dim, end_dim).
    flattens: tuple[int, int] | None = None
    # A convolution's number of spatial dims (its channels are the dim before them).
    window_dims: int | None = None


@dataclass(frozen=True)
class Mismatch:
    layer: cst.Call
    expected: int
    unit: str
    given: Features


_ARITHMETIC = {cst.Multiply: lambda a, b: a * b, cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b,
               cst.FloorDivide: lambda a, b: a // b if b else None}


def constant(expr: cst.BaseExpression) -> int | None:
    """An integer literal, or arithmetic on them (`16 * 5 * 5`, `28 * 28`)."""
    return integer_arithmetic(expr, int_value)


def integer_arithmetic(expr: cst.BaseExpression, leaf: Callable[[cst.BaseExpression], int | None]) -> int | None:
    """The value of integer arithmetic whose operands (other than arithmetic) `leaf` gives."""
    if isinstance(expr, cst.BinaryOperation):
        return arithmetic(expr.operator, integer_arithmetic(expr.left, leaf), integer_arithmetic(expr.right, leaf))
    return leaf(expr)


def arithmetic(operator: cst.BaseBinaryOp, left: int | None, right: int | None) -> int | None:
    """`left <operator> right` for the integer operators sizes are computed with; None otherwise."""
    if left is None or right is None or type(operator) not in _ARITHMETIC:
        return None
    return _ARITHMETIC[type(operator)](left, right)


def _size(call: cst.Call, position: int, keyword: str) -> int | None:
    expr = argument(call, position, keyword)
    value = constant(expr) if expr is not None else None
    return value if value is not None and value > 0 else None


def _flag(call: cst.Call, keyword: str) -> bool | None:
    """A boolean keyword's literal value; None when it is an expression."""
    arg = keyword_arg(call, keyword)
    if arg is None:
        return False
    name = dotted_name(arg.value)
    return {"True": True, "False": False}.get(name or "")


def _recurrent(name: str, call: cst.Call) -> Layer:
    expects = _size(call, 0, "input_size")
    hidden = _size(call, 1, "hidden_size")
    bidirectional = _flag(call, "bidirectional")
    positional = positional_args(call)
    projected = keyword_arg(call, "proj_size") is not None
    if bidirectional is None or projected or len(positional) > 6 or hidden is None:
        return Layer(name, expects=expects, reads=frozenset({LAST}), returns_pair=True)
    directions = 2 if bidirectional else 1
    note = f" (bidirectional: 2 x {hidden})" if bidirectional else ""
    return Layer(name, expects=expects, reads=frozenset({LAST}), gives=hidden * directions,
                 gives_axes=frozenset({LAST}), note=note, returns_pair=True)


def layer_of(name: str, call: cst.Call) -> Layer | None:
    """The sizes of the `torch.nn` layer `name` built by `call`; None for a layer that ends what is known."""
    if any(arg.star for arg in call.args):
        return None
    if name in _KEEP_ALL:
        return Layer(name, keeps=_BOTH, reshape=_same)
    if name in _KEEP_CHANNELS:
        return Layer(name, keeps=frozenset({CHANNEL}), reshape=_pooling(name, call))
    if name == "Linear":
        out = _size(call, 1, "out_features")
        return Layer(name, expects=_size(call, 0, "in_features"), reads=frozenset({LAST}),
                     gives=out, gives_axes=frozenset({LAST}), reshape=partial(_last_to, out) if out else None)
    if name in _CONVOLUTIONS:
        out = _size(call, 1, "out_channels")
        window = _window_of(name, call) if out is not None and name in _WINDOWS else None
        return Layer(name, expects=_size(call, 0, "in_channels"), reads=frozenset({CHANNEL}),
                     gives=out, gives_axes=frozenset({CHANNEL}),
                     reshape=partial(_windowed, window, out) if window is not None else None,
                     window_dims=_WINDOWS[name][0] if name in _WINDOWS else None)
    if name == "Flatten":
        start, end = argument(call, 0, "start_dim"), argument(call, 1, "end_dim")
        dims = (1 if start is None else int_value(start), -1 if end is None else int_value(end))
        return Layer(name, flattens=dims) if None not in dims else None
    if name == "Embedding":
        return Layer(name, gives=_size(call, 1, "embedding_dim"), gives_axes=frozenset({LAST}))
    if name in _RECURRENT:
        return _recurrent(name, call)
    if name in _BATCH_NORMS:
        return Layer(name, keeps=_BOTH, expects=_size(call, 0, "num_features"), reads=_BATCH_NORMS[name],
                     reshape=_same)
    if name == "GroupNorm":
        return Layer(name, keeps=_BOTH, expects=_size(call, 1, "num_channels"), reads=_BOTH, reshape=_same)
    if name in ("LayerNorm", "RMSNorm"):
        return Layer(name, keeps=_BOTH, expects=_size(call, 0, "normalized_shape"), reads=frozenset({LAST}),
                     reshape=_same)
    return None


# Shape arithmetic ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """A window sliding over the last `dims` sizes; None per dim where padding is 'same'."""

    dims: int
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...] | None
    dilation: tuple[int, ...]
    ceil: bool
    # A transposed convolution's extra output rows (None: the window is not transposed).
    output_padding: tuple[int, ...] | None = None

    def size(self, size: int | None, index: int) -> int | None:
        if size is None:
            return None
        if self.padding is None:
            return size
        padding = self.padding[index]
        if self.output_padding is not None:
            out = (size - 1) * self.stride[index] - 2 * padding + self.dilation[index] * (self.kernel[index] - 1) \
                + self.output_padding[index] + 1
            return out if out > 0 else None
        span = size + 2 * padding - self.dilation[index] * (self.kernel[index] - 1) - 1
        rounding = math.ceil if self.ceil else math.floor
        out = rounding(span / self.stride[index]) + 1
        if self.ceil and (out - 1) * self.stride[index] >= size + padding:
            out -= 1  # the last window must start inside the input
        return out if out > 0 else None


def _per_dim(expr: cst.BaseExpression | None, dims: int, default: int | None) -> tuple[int, ...] | None:
    """A window argument as one int per spatial dim: `3` or `(3, 3)`; the default when absent."""
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return None if default is None else (default,) * dims
    if isinstance(expr, (cst.Tuple, cst.List)):
        values = tuple(constant(element.value) for element in expr.elements)
        return values if len(values) == dims and None not in values else None
    value = constant(expr)
    return None if value is None else (value,) * dims


def _window_of(name: str, call: cst.Call, offset: int = 0) -> _Window | None:
    """The window of the layer kind `name` built by `call`; `offset` skips leading arguments
    (the input of the functional form)."""
    dims, places = _WINDOWS[name]

    def arg(index: int) -> cst.BaseExpression | None:
        place = places[index]
        return None if place is None else argument(call, place[0] + offset, place[1])

    kernel = _per_dim(arg(0), dims, None)
    if kernel is None:
        return None
    stride_expr = arg(1)
    if stride_expr is None or dotted_name(stride_expr) == "None":
        stride = (1,) * dims if name.startswith("Conv") else kernel
    else:
        stride = _per_dim(stride_expr, dims, None)
    padding_text = string_value(arg(2)) if arg(2) is not None else None
    if padding_text == "same":
        padding = None
    else:
        padding = (0,) * dims if padding_text == "valid" else _per_dim(arg(2), dims, 0)
    dilation = _per_dim(arg(3), dims, 1)
    if dilation is None and padding_text == "same":
        dilation = (1,) * dims  # "same" keeps the sizes whatever the dilation
    ceil_expr = arg(4)
    ceil = False if ceil_expr is None else {"True": True, "False": False}.get(dotted_name(ceil_expr) or "")
    output_padding = _per_dim(arg(5), dims, 0) if places[5] is not None else None
    if None in (stride, dilation, ceil) or 0 in stride or (padding is None and padding_text != "same") \
            or (places[5] is not None and (output_padding is None or padding is None)):
        return None
    return _Window(dims, kernel, stride, padding, dilation, ceil, output_padding)


def pads_to_same(name: str, call: cst.Call, padding: cst.BaseExpression,
                 known: Callable[[cst.BaseExpression], int | None]) -> bool:
    """The convolution `call` (kernel a known odd integer, stride 1) pads by `padding` (its
    padding argument, or what a name there holds) half its dilated kernel whatever the dilation:
    `(kernel_size - 1) // 2 * dilation`, the TCN idiom, keeps the length for any dilation.
    `known` gives the integers the analysis knows (`kernel_size`)."""
    if name not in _WINDOWS or not name.startswith("Conv"):
        return False
    dims, places = _WINDOWS[name]
    kernel = argument(call, *places[0])
    size = known(kernel) if kernel is not None else None
    stride = argument(call, *places[1])
    if size is None or size % 2 == 0 or (stride is not None and known(stride) != 1):
        return False
    dilation = argument(call, *places[3])
    written = dotted_name(dilation) if dilation is not None else None
    for trial in (1, 2, 3):
        # The padding's value with the dilation argument, as written, taken to be `trial`.
        value = integer_arithmetic(padding, lambda expr: trial if written is not None and dotted_name(expr) == written
                                   else known(expr))
        if value is None or 2 * value != (trial if dilation is not None else 1) * (size - 1):
            return False
    return True


def window_reshape(name: str, call: cst.Call) -> Callable[[Shape], Shape | None] | None:
    """The spatial arithmetic of a convolution or pooling layer built by `call`, whatever its
    channel arguments: the shape it maps to keeps the input's channels (None for other layers)."""
    if name not in _WINDOWS or any(arg.star for arg in call.args):
        return None
    window = _window_of(name, call)
    return partial(_windowed, window, None) if window is not None else None


def window_span(name: str, call: cst.Call) -> tuple[int, ...] | None:
    """The fewest input positions, per spatial dim, that the convolution or pooling layer built
    by `call` needs for one output (its dilated kernel, less its padding on both sides); None
    where its window is not known or pads to keep the size."""
    window = _window_of(name, call) if name in _WINDOWS and not any(arg.star for arg in call.args) else None
    if window is None or window.padding is None or window.output_padding is not None:
        return None
    return tuple(dilation * (kernel - 1) + 1 - 2 * padding
                 for kernel, padding, dilation in zip(window.kernel, window.padding, window.dilation))


def _same(shape: Shape) -> Shape:
    return shape


def _last_to(size: int, shape: Shape) -> Shape:
    return (*shape[:-1], size)


def _windowed(window: _Window, channels: int | None, shape: Shape) -> Shape | None:
    """The shape after `window`, on a batched or unbatched input; `channels`: a convolution's output channels."""
    dims = window.dims
    if len(shape) not in (dims + 1, dims + 2):
        return None
    head = shape[:-dims]
    if channels is not None:
        head = (*head[:-1], channels)
    return (*head, *(window.size(size, index) for index, size in enumerate(shape[-dims:])))


def _adaptive(dims: int, sizes: tuple[int | None, ...], shape: Shape) -> Shape | None:
    if len(shape) not in (dims + 1, dims + 2):
        return None
    spatial = shape[-dims:]
    return (*shape[:-dims], *(old if new is None else new for old, new in zip(spatial, sizes)))


def _adaptive_sizes(expr: cst.BaseExpression | None, dims: int) -> tuple[int | None, ...] | None:
    """`output_size`: `7`, `(7, 7)` or `(None, 7)` (None keeps that size)."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        values = tuple(None if dotted_name(e.value) == "None" else constant(e.value) for e in expr.elements)
        if len(values) != dims or any(v is None and dotted_name(e.value) != "None" for v, e in zip(values, expr.elements)):
            return None
        return values
    value = constant(expr) if expr is not None else None
    return None if value is None else (value,) * dims


def _pooling(name: str, call: cst.Call, offset: int = 0) -> Callable[[Shape], Shape | None] | None:
    """The shape arithmetic of a pooling layer (functional form: `offset` 1); None for the others."""
    if name in _WINDOWS:
        window = _window_of(name, call, offset)
        return partial(_windowed, window, None) if window is not None else None
    if name in _ADAPTIVE:
        sizes = _adaptive_sizes(argument(call, offset, "output_size"), _ADAPTIVE[name])
        return partial(_adaptive, _ADAPTIVE[name], sizes) if sizes is not None else None
    return None


def pooling_layer(name: str, call: cst.Call) -> Layer:
    """`F.max_pool2d(x, 2)` and the other functional pooling calls, as the layer they compute."""
    return Layer(name, keeps=frozenset({CHANNEL}), reshape=_pooling(name, call, offset=1))


def flattened(dims: tuple[int, int], shape: Shape) -> tuple[Shape, Shape] | None:
    """(the shape after flattening dims `start..end`, the sizes multiplied); None if one is unknown."""
    start, end = (dim + len(shape) if dim < 0 else dim for dim in dims)
    if not 0 <= start <= end < len(shape):
        return None
    factors = shape[start:end + 1]
    if None in factors:
        return None
    return (*shape[:start], math.prod(factors), *shape[end + 1:]), factors


def _unit(layer: Layer) -> str:
    if layer.reads == _BOTH:
        return "features"
    return "input features" if LAST in layer.reads else "channels"


def apply(layer: Layer, call: cst.CSTNode, incoming: Features | None) -> tuple[Features | None, Mismatch | None]:
    """The features after `layer` (built by `call`) reads `incoming`, and the mismatch if any."""
    mismatch = None
    if incoming is not None and layer.expects is not None and incoming.axes & layer.reads:
        if incoming.size != layer.expects:
            mismatch = Mismatch(call, layer.expects, _unit(layer), incoming)
    elif incoming is not None and layer.expects is not None and layer.window_dims is not None:
        mismatch = _input_channels_mismatch(layer, call, incoming)
    features = _sizes_after(layer, call, incoming, mismatch)
    if incoming is None or incoming.shape is None:
        return features, mismatch
    return _with_shape(layer, call, incoming, features), mismatch


def _input_channels_mismatch(layer: Layer, call: cst.CSTNode, incoming: Features) -> Mismatch | None:
    """A convolution fed the model's input directly, whose channels (dim 1, or dim 0 unbatched)
    are not the ones it expects: an RGB batch into `Conv2d(1, ...)`."""
    origin, dims = incoming.origin, layer.window_dims
    if origin is None or incoming.source is not origin.node or len(incoming.shape) not in (dims + 1, dims + 2):
        return None
    channels = incoming.shape[-(dims + 1)]
    if channels is None or channels == layer.expects:
        return None
    return Mismatch(call, layer.expects, _unit(layer), replace(incoming, size=channels))


def _with_shape(layer: Layer, call: cst.CSTNode, incoming: Features, features: Features | None) -> Features | None:
    """`features` with the whole shape after `layer`, where the incoming shape is known."""
    if layer.flattens is not None:
        result = flattened(layer.flattens, incoming.shape)
        if result is None:
            return None
        shape, factors = result
        formula = "*".join(map(str, factors)) if len(factors) > 1 else ""
        axes = _BOTH if len(shape) == 2 else frozenset({LAST})
        return Features(shape[-1], axes, call, shape=shape, origin=incoming.origin, formula=formula)
    shape = layer.reshape(incoming.shape) if layer.reshape is not None else None
    if shape is None:
        return replace(features, shape=None, origin=None) if features is not None else None
    if features is None:
        features = Features(shape[-1] or 0, frozenset(), call)
    return replace(features, shape=shape, origin=incoming.origin)


def _sizes_after(layer: Layer, call: cst.CSTNode, incoming: Features | None, mismatch: Mismatch | None) -> Features | None:
    if layer.gives is not None:
        return Features(layer.gives, layer.gives_axes, call, layer.note)
    if layer.keeps and layer.expects is None:
        kept = incoming.axes & layer.keeps if incoming is not None else frozenset()
        return replace(incoming, axes=kept, sequence=False) if kept else None
    if layer.keeps:
        # A norm that checks its size: past it, the size is the one it checked.
        known = incoming if incoming is not None and mismatch is None and incoming.axes & layer.reads else None
        return known or Features(layer.expects, layer.reads, call)
    return None


class LayerChains:
    """Mismatched neighbours in `nn.Sequential(...)` calls and in a Module's `forward`."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def layer(self, call: cst.Call) -> Layer | None:
        name = nn_class_name(self._ctx.callee(call))
        if name == "Sequential":
            return self._sequential_layer(call)
        return layer_of(name, call) if name is not None else None

    def sequential(self, call: cst.Call, seed: Input | None = None) -> list[Mismatch]:
        """The mismatches between neighbouring layers of `nn.Sequential(call's arguments)`, fed `seed`."""
        return self.chain(call, seed.features() if seed is not None else None)[1]

    def chain(self, call: cst.Call, incoming: Features | None) -> tuple[Features | None, list[Mismatch]]:
        """What `nn.Sequential(call's arguments)` gives for `incoming`, and its mismatches."""
        features, found = incoming, []
        for arg in call.args:
            if arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Call):
                features = None
                continue
            if nn_class_name(self._ctx.callee(arg.value)) == "Sequential":
                features, inner = self.chain(arg.value, features)
                found.extend(inner)
                continue
            layer = self.layer(arg.value)
            if layer is None:
                features = None
                continue
            features, mismatch = apply(layer, arg.value, features)
            if mismatch is not None:
                found.append(mismatch)
            if layer.returns_pair:
                features = None
        return features, found

    def _sequential_layer(self, call: cst.Call) -> Layer | None:
        """A nested `nn.Sequential` seen from outside, with no known input: what it gives."""
        features, _ = self.chain(call, None)
        if features is None or not features.axes:
            return None
        return Layer("Sequential", gives=features.size, gives_axes=features.axes, note=features.note)

    def forward(self, classdef: cst.ClassDef, seed: Input | None = None) -> list[Mismatch]:
        """The mismatches along `x = self.a(x); x = self.b(x)` in `classdef`'s `forward`, whose
        first argument is `seed` where that is known."""
        methods = {s.name.value: s for s in classdef.body.body if isinstance(s, cst.FunctionDef)}
        forward = methods.get("forward")
        if forward is None or "__init__" not in methods:
            return []
        init = methods["__init__"]
        if sum(self._sized(value) for value in _direct_values(init, _self_name(init))) < (1 if seed else 2):
            return []  # too few layers with literal sizes: nothing can mismatch
        layers = self._init_layers(classdef, init)
        if not layers:
            return []
        return _ForwardFlow(self, layers, _self_name(forward)).run(forward, seed)

    def _sized(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        layer = self.layer(value)
        return layer is not None and (layer.expects is not None or layer.gives is not None)

    def _init_layers(self, classdef: cst.ClassDef, init: cst.FunctionDef) -> dict[str, cst.Call]:
        """`self.<attr>` assigned exactly once in the class, in `__init__`, to a layer call."""
        self_name = _self_name(init)
        counts: dict[str, int] = {}
        built: dict[str, cst.Call] = {}
        direct = {id(value) for value in _direct_values(init, self_name)}
        for target, value in _self_assignments(classdef):
            counts[target] = counts.get(target, 0) + 1
            if isinstance(value, cst.Call) and id(value) in direct:
                built[target] = value
        return {attr: call for attr, call in built.items() if counts[attr] == 1}


def _self_name(function: cst.FunctionDef) -> str | None:
    params = function.params.posonly_params or function.params.params
    return params[0].name.value if params else None


def _self_assignments(classdef: cst.ClassDef):
    """(attribute, value) for every `self.<attr> = value` (value None for augmented/tuple targets) in the class."""
    found = []

    class _Collector(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                _record(target.target, node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            _record(node.target, node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            _record(node.target, None)

        def visit_Call(self, node: cst.Call) -> None:
            # setattr(self, "name", ...) and add_module("name", ...) also (re)bind an attribute.
            if dotted_name(node.func) in ("setattr", "self.add_module", "self.register_module"):
                found.append(("*", None))

    def _record(target: cst.BaseExpression, value) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                _record(element.value, None)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            found.append((target.attr.value, value))

    classdef.body.visit(_Collector())
    if any(name == "*" for name, _ in found):
        return []
    return found


def _direct_values(init: cst.FunctionDef, self_name: str | None) -> list[cst.BaseExpression]:
    """Values of `self.x = <value>` statements at the top level of `__init__` (not under an `if`)."""
    values = []
    for statement in suite_statements(init.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Attribute) and dotted_name(target.value) == self_name:
                    values.append(small.value)
    return values


@dataclass(frozen=True)
class _Pair:
    """An RNN's `(output, hidden)`: `first` is what the output carries."""

    first: Features | None


class _ForwardFlow:
    """Follows the feature sizes through `forward`'s top-level statements, in order."""

    def __init__(self, chains: LayerChains, layers: dict[str, cst.Call], self_name: str | None) -> None:
        self._chains = chains
        self._layers = layers
        self._self = self_name
        self._env: dict[str, Features | _Pair | None] = {}
        self._found: list[Mismatch] = []

    def run(self, forward: cst.FunctionDef, seed: Input | None) -> list[Mismatch]:
        params = forward.params.params
        if seed is not None and len(params) >= 2:
            self._env[params[1].name.value] = seed.features()
        for statement in suite_statements(forward.body):
            if not isinstance(statement, cst.SimpleStatementLine):
                # Branches and loops merge paths that this straight-line flow does not model.
                self._env.clear()
                continue
            for small in statement.body:
                self._statement(small)
        return self._found

    def _statement(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            value = self._value(small.value)
            for target in small.targets:
                self._bind(target.target, value)
        elif isinstance(small, (cst.Return, cst.Expr)) and small.value is not None:
            self._value(small.value)
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            if small.value is not None:
                self._value(small.value)
            self._bind(small.target, None)

    def _bind(self, target: cst.BaseExpression, value) -> None:
        if isinstance(target, cst.Name):
            self._env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            first = value.first if isinstance(value, _Pair) and len(target.elements) == 2 else None
            for index, element in enumerate(target.elements):
                self._bind(element.value, first if index == 0 else None)

    def _value(self, expr: cst.BaseExpression):
        if isinstance(expr, cst.Name):
            return self._env.get(expr.value)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr)
        if not isinstance(expr, cst.Call):
            return None
        layer_call = self._layer_call(expr)
        inputs = [self._value(arg.value) for arg in expr.args]
        if layer_call is not None and len(expr.args) == 1 and not expr.args[0].keyword and not expr.args[0].star:
            return self._through_layer(layer_call, inputs[0])
        functional = self._functional_layer(expr)
        if functional is not None and inputs and isinstance(inputs[0], Features) and expr.args[0].keyword is None:
            return apply(functional, expr, inputs[0])[0]
        flattening = _flatten_call(expr, self._chains._ctx.callee(expr))
        if flattening is not None:
            receiver, dims = flattening
            incoming = self._value(receiver)
            return apply(Layer("Flatten", flattens=dims), expr, incoming)[0] if isinstance(incoming, Features) else None
        if len(inputs) >= 1 and self._keeps_size(expr):
            first = inputs[0] if expr.args[0].keyword is None else None
            return first if isinstance(first, Features) else None
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _KEEP_METHODS:
            receiver = self._value(expr.func.value)
            return receiver if isinstance(receiver, Features) else None
        return None

    def _subscript(self, expr: cst.Subscript):
        value = self._value(expr.value)
        if isinstance(value, _Pair):
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            return value.first if isinstance(index, cst.Index) and int_value(index.value) == 0 else None
        if isinstance(value, Features) and value.sequence and _keeps_last_dim(expr):
            return Features(value.size, frozenset({LAST}), value.source, value.note)
        return None

    def _layer_call(self, call: cst.Call) -> cst.Call | None:
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self._self:
            return self._layers.get(func.attr.value)
        return None

    def _keeps_size(self, call: cst.Call) -> bool:
        return self._chains._ctx.callee(call) in _KEEP_FUNCTIONS

    def _functional_layer(self, call: cst.Call) -> Layer | None:
        kind = FUNCTIONAL_POOLING.get(self._chains._ctx.callee(call) or "")
        return pooling_layer(kind, call) if kind is not None else None

    def _through_layer(self, layer_call: cst.Call, incoming):
        if isinstance(incoming, Features) and incoming.shape is not None:
            if nn_class_name(self._chains._ctx.callee(layer_call)) == "Sequential":
                features, found = self._chains.chain(layer_call, incoming)
                self._found.extend(found)
                return features
        layer = self._chains.layer(layer_call)
        if layer is None:
            return None
        features, mismatch = apply(layer, layer_call, incoming if isinstance(incoming, Features) else None)
        if mismatch is not None:
            self._found.append(mismatch)
        if not layer.returns_pair:
            return features
        return _Pair(replace(features, sequence=True) if features is not None else None)


def _flatten_call(call: cst.Call, callee: str | None) -> tuple[cst.BaseExpression, tuple[int, int]] | None:
    """(the tensor, (start_dim, end_dim)) of `torch.flatten(x, 1)`, `x.flatten(1)` and
    `x.view(x.size(0), -1)` / `x.reshape(x.shape[0], -1)`; None for any other call."""
    if callee == "torch.flatten":
        tensor = argument(call, 0, "input")
        start, end = argument(call, 1, "start_dim"), argument(call, 2, "end_dim")
    elif callee is None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "flatten":
        tensor = call.func.value
        start, end = argument(call, 0, "start_dim"), argument(call, 1, "end_dim")
    elif callee is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("view", "reshape"):
        sizes = shape_args(call)
        if sizes is None or len(sizes) != 2 or int_value(sizes[1]) != -1 or not _is_batch_size(sizes[0]):
            return None
        return call.func.value, (1, -1)
    else:
        return None
    dims = (0 if start is None else int_value(start), -1 if end is None else int_value(end))
    return (tensor, dims) if tensor is not None and None not in dims else None


def _is_batch_size(expr: cst.BaseExpression) -> bool:
    """`x.size(0)` or `x.shape[0]`: dim 0 of a tensor."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size":
        return len(expr.args) == 1 and int_value(expr.args[0].value) == 0
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        return isinstance(index, cst.Index) and int_value(index.value) == 0
    return False


def _keeps_last_dim(expr: cst.Subscript) -> bool:
    """`out[:, -1]`, `out[:, -1, :]`, `out[-1]`: integer indices and full slices that leave the
    last dimension of an RNN output (rank 3) alone."""
    elements = [element.slice for element in expr.slice]
    for element in elements:
        if isinstance(element, cst.Index) and int_value(element.value) is None:
            return False
        if isinstance(element, cst.Slice) and not (element.lower is None and element.upper is None and element.step is None):
            return False
    return len(elements) <= 2 or isinstance(elements[-1], cst.Slice)
