"""The shape a `torch.nn` layer gives for an input shape, and the input sizes it insists on.

Sizes are code, as the tensor-facts model keeps them (`"4"`, `"T"`, `"d_model"`; None unknown),
so a layer built with `nn.Linear(d_model, 64)` in a class constructed as `Net(d_model=32)` reads
`"32"`. The constructor's size arguments are kept per layer (`LayerConfig`, read where the layer
is built, from the table `_SIZE_PARAMETERS`); `output` maps an input shape to the output shape
and says which input size contradicts the layer, when both are literals.

    config = layer_config("LSTM", {"input_size": "32", "hidden_size": "64", "batch_first": "False"})
    output(config, ("8", "10", "32"))   # LayerOutput(shape=("8", "10", "64"), hidden=("1", "10", "64"), ...)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from torchlint.analysis.layer_sizes import layer_of
from torchlint.analysis.shape_checks import differ, literal

Sizes = tuple[str | None, ...]

_RECURRENT = frozenset({"RNN", "LSTM", "GRU"})
_CONVOLUTIONS = {f"Conv{n}d": n for n in (1, 2, 3)}
_BATCH_NORMS = {"BatchNorm1d": 1, "BatchNorm2d": 2, "BatchNorm3d": 3}
# Pooling that slides a window: the output's spatial sizes follow `layer_sizes`'s arithmetic.
_WINDOWED = frozenset(f"{kind}Pool{n}d" for kind in ("Max", "Avg") for n in (1, 2, 3))
_ADAPTIVE_POOLS = {f"Adaptive{kind}Pool{n}d": n for kind in ("Avg", "Max") for n in (1, 2, 3)}
# Layers whose output has the input's shape.
_SHAPE_KEEPING = frozenset(
    "ReLU ReLU6 LeakyReLU PReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Hardtanh Hardswish Softplus "
    "Softmax LogSoftmax Dropout Dropout1d Dropout2d Dropout3d AlphaDropout Identity TransformerEncoder "
    "TransformerDecoder".split()
)
# A layer kind -> its constructor's size and flag parameters, in their positional order.
_SIZE_PARAMETERS = {
    "Linear": ("in_features", "out_features"),
    "Embedding": ("num_embeddings", "embedding_dim"),
    **{name: ("input_size", "hidden_size", "num_layers") for name in _RECURRENT},
    "MultiheadAttention": ("embed_dim", "num_heads"),
    **{name: ("d_model", "nhead") for name in ("TransformerEncoderLayer", "TransformerDecoderLayer")},
    **{name: ("in_channels", "out_channels") for name in _CONVOLUTIONS},
    **{name: ("num_features",) for name in _BATCH_NORMS},
    "LayerNorm": ("normalized_shape",),
    **{name: ("output_size",) for name in _ADAPTIVE_POOLS},
    "Flatten": ("start_dim", "end_dim"),
}
KEYWORD_FLAGS = ("batch_first", "bidirectional", "kdim", "vdim", "proj_size")


def size_parameters(kind: str) -> tuple[str, ...]:
    """The size parameters `layer_config` reads for the layer class `kind` (`Linear`)."""
    return _SIZE_PARAMETERS.get(kind, ()) if kind not in _SHAPE_KEEPING else ()


def shaped(kind: str) -> bool:
    return kind in _SIZE_PARAMETERS or kind in _SHAPE_KEEPING or kind in _WINDOWED or kind == "Sequential"


@dataclass(frozen=True)
class LayerConfig:
    """A layer class (`Linear`) and the size code of each constructor argument it was given."""

    kind: str
    arguments: tuple[tuple[str, str], ...]
    built_by: cst.Call | None = field(default=None, compare=False, repr=False)
    # An `nn.Sequential`'s layers, in order (None for one of unknown sizes).
    layers: tuple["LayerConfig | None", ...] = ()

    def get(self, name: str, default: str | None = None) -> str | None:
        return next((value for key, value in self.arguments if key == name), default)


@dataclass(frozen=True)
class Contradiction:
    """The input's size in `dim` is `given` where the layer needs `expected` (`what` it is)."""

    dim: int
    expected: str
    given: str
    what: str
    # Inside an `nn.Sequential`: the layer that cannot take its input, and that input's sizes.
    layer: "LayerConfig | None" = None
    sizes: Sizes | None = None


@dataclass(frozen=True)
class LayerOutput:
    shape: Sizes | None
    # An RNN's final hidden state (h_n), beside its output sequence.
    hidden: Sizes | None = None
    contradiction: Contradiction | None = None


def output(config: LayerConfig, sizes: Sizes) -> LayerOutput:
    kind = config.kind
    if kind == "Sequential":
        return _through_layers(config, sizes)
    if kind in _WINDOWED:
        return LayerOutput(_windowed(config, sizes))
    if kind in _SHAPE_KEEPING:
        return LayerOutput(sizes)
    if kind == "Linear":
        return _last_replaced(config, sizes, "in_features", config.get("out_features"), "input features")
    if kind == "Embedding":
        return LayerOutput((*sizes, config.get("embedding_dim")))
    if kind == "LayerNorm":
        return _last_replaced(config, sizes, "normalized_shape", sizes[-1] if sizes else None, "normalized features")
    if kind == "MultiheadAttention":
        return _last_replaced(config, sizes, "embed_dim", sizes[-1] if sizes else None, "embedding features")
    if kind in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        return _last_replaced(config, sizes, "d_model", sizes[-1] if sizes else None, "model features")
    if kind in _RECURRENT:
        return _recurrent(config, sizes)
    if kind in _CONVOLUTIONS:
        found = _channels(config, sizes, _CONVOLUTIONS[kind], "in_channels", config.get("out_channels"))
        return LayerOutput(_windowed(config, sizes) or found.shape, contradiction=found.contradiction)
    if kind in _BATCH_NORMS:
        spatial = _BATCH_NORMS[kind]
        if spatial == 1 and len(sizes) == 2:
            return _channels(config, sizes, 0, "num_features", None)
        return _channels(config, sizes, spatial, "num_features", None)
    if kind in _ADAPTIVE_POOLS:
        return _adaptive(config, sizes, _ADAPTIVE_POOLS[kind])
    if kind == "Flatten":
        return _flattened(config, sizes)
    return LayerOutput(None)


def _through_layers(config: LayerConfig, sizes: Sizes) -> LayerOutput:
    """An `nn.Sequential`: each layer's output is the next one's input; the first contradiction
    is the Sequential's."""
    for layer in config.layers:
        result = output(layer, sizes) if layer is not None else LayerOutput(None)
        if result.contradiction is not None:
            return LayerOutput(None, contradiction=replace(result.contradiction, layer=layer, sizes=sizes))
        if result.shape is None:
            return LayerOutput(None)
        sizes = result.shape
    return LayerOutput(sizes)


def _windowed(config: LayerConfig, sizes: Sizes) -> Sizes | None:
    """A convolution's or pooling's output, from the kernel, stride and padding arithmetic of
    `layer_sizes` where the layer's arguments and the input's sizes after the batch are literals."""
    layer = layer_of(config.kind, config.built_by) if config.built_by is not None else None
    rest = [literal(size) for size in sizes[1:]]
    if layer is None or layer.reshape is None or not sizes or None in rest:
        return None
    shape = layer.reshape((1, *rest))
    if shape is None or None in shape:
        return None
    return (sizes[0], *(str(size) for size in shape[1:]))


def _check(config: LayerConfig, sizes: Sizes, dim: int, parameter: str, what: str) -> Contradiction | None:
    expected = config.get(parameter)
    given = sizes[dim] if -len(sizes) <= dim < len(sizes) else None
    if differ(expected, given):
        return Contradiction(dim if dim >= 0 else len(sizes) + dim, expected, given, what)
    return None


def _last_replaced(config: LayerConfig, sizes: Sizes, parameter: str, last: str | None, what: str) -> LayerOutput:
    if not sizes:
        return LayerOutput(None)
    return LayerOutput((*sizes[:-1], last), contradiction=_check(config, sizes, -1, parameter, what))


def _recurrent(config: LayerConfig, sizes: Sizes) -> LayerOutput:
    if len(sizes) not in (2, 3) or config.get("proj_size") is not None:
        return LayerOutput(None)
    hidden = config.get("hidden_size")
    bidirectional = config.get("bidirectional", "False")
    directions = {"True": 2, "False": 1}.get(bidirectional)
    width = str(literal(hidden) * directions) if literal(hidden) is not None and directions else None
    layers = literal(config.get("num_layers", "1"))
    stacked = str(layers * directions) if layers is not None and directions else None
    if len(sizes) == 2:
        state = (stacked, hidden)
    else:
        batch_first = config.get("batch_first", "False")
        batch = {"True": sizes[0], "False": sizes[1]}.get(batch_first)
        state = (stacked, batch, hidden)
    contradiction = _check(config, sizes, -1, "input_size", "input features")
    return LayerOutput((*sizes[:-1], width), hidden=state, contradiction=contradiction)


def initial_state_contradiction(config: LayerConfig, sizes: Sizes, state: Sizes) -> Contradiction | None:
    """Where an RNN's initial hidden state (`h0`, or each of an LSTM's `(h0, c0)`) cannot be the
    one the layer needs for an input of `sizes`: (num_layers * directions, batch, hidden_size),
    without the batch for an unbatched input."""
    if config.kind not in _RECURRENT:
        return None
    expected = _recurrent(config, sizes).hidden
    if expected is None or len(expected) != len(state):
        return None
    what = ("layers x directions", "batch", "hidden features") if len(expected) == 3 else ("layers x directions", "hidden features")
    for dim, (wanted, given) in enumerate(zip(expected, state)):
        if differ(wanted, given):
            return Contradiction(dim, wanted, given, f"{what[dim]} in the initial hidden state")
    return None


def _channels(config: LayerConfig, sizes: Sizes, spatial: int, parameter: str, out: str | None) -> LayerOutput:
    """A layer reading channels before `spatial` trailing dims (batched or not)."""
    if len(sizes) not in (spatial + 1, spatial + 2):
        return LayerOutput(None)
    channel = len(sizes) - spatial - 1
    contradiction = _check(config, sizes, channel, parameter, "channels")
    if out is None:
        return LayerOutput(sizes, contradiction=contradiction)
    # Spatial sizes unknown here: `_windowed` works them out where the window's arguments are literals.
    return LayerOutput((*sizes[:channel], out, *(None,) * spatial), contradiction=contradiction)


def _adaptive(config: LayerConfig, sizes: Sizes, spatial: int) -> LayerOutput:
    if len(sizes) not in (spatial + 1, spatial + 2):
        return LayerOutput(None)
    wanted = config.get("output_size")
    if wanted is None or literal(wanted) is None:
        return LayerOutput((*sizes[:-spatial], *(None,) * spatial))
    return LayerOutput((*sizes[:-spatial], *(wanted,) * spatial))


def _flattened(config: LayerConfig, sizes: Sizes) -> LayerOutput:
    start, end = literal(config.get("start_dim", "1")), config.get("end_dim", "-1")
    if start is None or end != "-1":
        return LayerOutput(None)
    return LayerOutput(flattened_sizes(sizes, start))


def flattened_sizes(sizes: Sizes, start: int) -> Sizes | None:
    """`sizes` with the dims from `start` on multiplied into one (None where one is not a literal)."""
    if start >= len(sizes):
        return None
    product = 1
    for size in sizes[start:]:
        if literal(size) is None:
            return (*sizes[:start], None)
        product *= literal(size)
    return (*sizes[:start], str(product))
