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
(`Flatten`, an unknown module, a size from a variable) ends what is known.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst

from torchlint.analysis.layouts import int_value
from torchlint.analysis.names import argument, dotted_name, keyword_arg, positional_args, suite_statements
from torchlint.analysis.nn_layers import nn_class_name

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


@dataclass(frozen=True)
class Features:
    """A known feature size of a tensor, on `axes`, written by the layer built at `source`."""

    size: int
    axes: frozenset[str]
    source: cst.Call
    note: str = ""
    # An RNN's output, of rank 3: indexing its first two dims keeps the features (`out[:, -1]`).
    sequence: bool = False


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


@dataclass(frozen=True)
class Mismatch:
    layer: cst.Call
    expected: int
    unit: str
    given: Features


def _size(call: cst.Call, position: int, keyword: str) -> int | None:
    expr = argument(call, position, keyword)
    value = int_value(expr) if expr is not None else None
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
        return Layer(name, keeps=_BOTH)
    if name in _KEEP_CHANNELS:
        return Layer(name, keeps=frozenset({CHANNEL}))
    if name == "Linear":
        return Layer(name, expects=_size(call, 0, "in_features"), reads=frozenset({LAST}),
                     gives=_size(call, 1, "out_features"), gives_axes=frozenset({LAST}))
    if name in _CONVOLUTIONS:
        return Layer(name, expects=_size(call, 0, "in_channels"), reads=frozenset({CHANNEL}),
                     gives=_size(call, 1, "out_channels"), gives_axes=frozenset({CHANNEL}))
    if name == "Embedding":
        return Layer(name, gives=_size(call, 1, "embedding_dim"), gives_axes=frozenset({LAST}))
    if name in _RECURRENT:
        return _recurrent(name, call)
    if name in _BATCH_NORMS:
        return Layer(name, keeps=_BOTH, expects=_size(call, 0, "num_features"), reads=_BATCH_NORMS[name])
    if name == "GroupNorm":
        return Layer(name, keeps=_BOTH, expects=_size(call, 1, "num_channels"), reads=_BOTH)
    if name in ("LayerNorm", "RMSNorm"):
        return Layer(name, keeps=_BOTH, expects=_size(call, 0, "normalized_shape"), reads=frozenset({LAST}))
    return None


def _unit(layer: Layer) -> str:
    if layer.reads == _BOTH:
        return "features"
    return "input features" if LAST in layer.reads else "channels"


def apply(layer: Layer, call: cst.Call, incoming: Features | None) -> tuple[Features | None, Mismatch | None]:
    """The features after `layer` (built by `call`) reads `incoming`, and the mismatch if any."""
    mismatch = None
    if incoming is not None and layer.expects is not None and incoming.axes & layer.reads:
        if incoming.size != layer.expects:
            mismatch = Mismatch(call, layer.expects, _unit(layer), incoming)
    if layer.gives is not None:
        return Features(layer.gives, layer.gives_axes, call, layer.note), mismatch
    if layer.keeps and layer.expects is None:
        kept = incoming.axes & layer.keeps if incoming is not None else frozenset()
        return (Features(incoming.size, kept, incoming.source, incoming.note) if kept else None), mismatch
    if layer.keeps:
        # A norm that checks its size: past it, the size is the one it checked.
        known = incoming if incoming is not None and mismatch is None and incoming.axes & layer.reads else None
        return known or Features(layer.expects, layer.reads, call), mismatch
    return None, mismatch


class LayerChains:
    """Mismatched neighbours in `nn.Sequential(...)` calls and in a Module's `forward`."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def layer(self, call: cst.Call) -> Layer | None:
        name = nn_class_name(self._ctx.callee(call))
        if name == "Sequential":
            return self._sequential_layer(call)
        return layer_of(name, call) if name is not None else None

    def sequential(self, call: cst.Call) -> list[Mismatch]:
        """The mismatches between neighbouring layers of `nn.Sequential(call's arguments)`."""
        return self._chain(call)[1]

    def _chain(self, call: cst.Call) -> tuple[Features | None, list[Mismatch]]:
        features, found = None, []
        for arg in call.args:
            if arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Call):
                features = None
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
        """A nested `nn.Sequential` seen from outside: what it gives (its first layer's input is
        not modelled, so nothing is checked going in)."""
        features, _ = self._chain(call)
        if features is None:
            return None
        return Layer("Sequential", gives=features.size, gives_axes=features.axes, note=features.note)

    def forward(self, classdef: cst.ClassDef) -> list[Mismatch]:
        """The mismatches along `x = self.a(x); x = self.b(x)` in `classdef`'s `forward`."""
        methods = {s.name.value: s for s in classdef.body.body if isinstance(s, cst.FunctionDef)}
        forward = methods.get("forward")
        if forward is None or "__init__" not in methods:
            return []
        init = methods["__init__"]
        if sum(self._sized(value) for value in _direct_values(init, _self_name(init))) < 2:
            return []  # fewer than two layers with literal sizes: nothing can mismatch
        layers = self._init_layers(classdef, init)
        if not layers:
            return []
        return _ForwardFlow(self, layers, _self_name(forward)).run(forward)

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

    def run(self, forward: cst.FunctionDef) -> list[Mismatch]:
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

    def _through_layer(self, layer_call: cst.Call, incoming):
        layer = self._chains.layer(layer_call)
        if layer is None:
            return None
        features, mismatch = apply(layer, layer_call, incoming if isinstance(incoming, Features) else None)
        if mismatch is not None:
            self._found.append(mismatch)
        if not layer.returns_pair:
            return features
        return _Pair(replace(features, sequence=True) if features is not None else None)


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
