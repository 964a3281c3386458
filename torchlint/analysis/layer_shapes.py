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
from typing import Callable

import libcst as cst

from torchlint.analysis.layer_sizes import window_reshape, window_span
from torchlint.analysis.shape_checks import differ, literal

Sizes = tuple[str | None, ...]

_RECURRENT = frozenset({"RNN", "LSTM", "GRU"})
_CELLS = frozenset({"RNNCell", "LSTMCell", "GRUCell"})
_CONVOLUTIONS = {f"{kind}{n}d": n for kind in ("Conv", "ConvTranspose") for n in (1, 2, 3)}
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
    **{name: ("num_embeddings", "embedding_dim") for name in ("Embedding", "EmbeddingBag")},
    **{name: ("input_size", "hidden_size", "num_layers") for name in _RECURRENT},
    **{name: ("input_size", "hidden_size") for name in _CELLS},
    "MultiheadAttention": ("embed_dim", "num_heads"),
    **{name: ("d_model", "nhead") for name in ("TransformerEncoderLayer", "TransformerDecoderLayer")},
    **{name: ("in_channels", "out_channels") for name in _CONVOLUTIONS},
    **{name: ("num_features",) for name in _BATCH_NORMS},
    "LayerNorm": ("normalized_shape",),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    **{name: ("output_size",) for name in _ADAPTIVE_POOLS},
    "Flatten": ("start_dim", "end_dim"),
}
KEYWORD_FLAGS = ("batch_first", "bidirectional", "kdim", "vdim", "proj_size")
# The kind of a layer of a Sequential that a function's parameter holds, sizes unknown until a
# call of the function gives it (`instantiated`); its one argument is the parameter's name.
PARAMETER_LAYER = "parameter"


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
    # `built_by` with the arguments the analysis knows as integers written in (`kernel_size=k`
    # of a constructor given k = 3 reads `kernel_size=3`): what a window's arithmetic reads.
    sized_call: cst.Call | None = field(default=None, compare=False, repr=False)

    def get(self, name: str, default: str | None = None) -> str | None:
        return next((value for key, value in self.arguments if key == name), default)


def with_integers(call: cst.Call, known: Callable[[cst.BaseExpression], int | None]) -> cst.Call:
    """`call` with each argument (or element of a tuple argument) whose integer value `known`
    gives written as that integer: the call a window's arithmetic can read."""
    args = [(arg, _written_as_integer(arg.value, known)) for arg in call.args]
    if all(value is arg.value for arg, value in args):
        return call
    return call.with_changes(args=[arg.with_changes(value=value) for arg, value in args])


def _written_as_integer(expr: cst.BaseExpression, known: Callable[[cst.BaseExpression], int | None]) -> cst.BaseExpression:
    # A function of the module, not a closure calling itself: that closure would be a reference
    # cycle keeping `known`'s interpreter, and the syntax tree it reads, for the cycle collector.
    if isinstance(expr, (cst.Tuple, cst.List)):
        elements = [element.with_changes(value=_written_as_integer(element.value, known)) for element in expr.elements]
        changed = any(new.value is not old.value for new, old in zip(elements, expr.elements))
        return expr.with_changes(elements=elements) if changed else expr
    if isinstance(expr, (cst.Integer, cst.SimpleString)):
        return expr
    value = known(expr)
    return cst.Integer(str(value)) if value is not None and value >= 0 else expr


def instantiated(config: LayerConfig, sizes: dict[str, str], layers: dict[str, LayerConfig]) -> LayerConfig:
    """A layer built from parameters (`nn.Conv2d(in_ch, out_ch, 3)` in `def conv_block(in_ch,
    out_ch, act)`) as one call builds it: each parameter named in `sizes` replaced by its size
    there, each layer a parameter holds (`act`) by the layer `layers` names for it."""
    if config.kind == PARAMETER_LAYER:
        return layers.get(config.get("name"), config)
    call = config.sized_call or config.built_by
    return replace(
        config,
        arguments=tuple((name, sizes.get(code, code)) for name, code in config.arguments),
        layers=tuple(None if layer is None else instantiated(layer, sizes, layers) for layer in config.layers),
        sized_call=None if call is None else with_integers(
            call, lambda expr: literal(sizes.get(expr.value)) if isinstance(expr, cst.Name) else None),
    )


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
    if kind in _WINDOWED or kind in _CONVOLUTIONS:
        too_short = _window_contradiction(config, sizes)
        if too_short is not None:
            return LayerOutput(None, contradiction=too_short)
    if kind in _WINDOWED:
        return LayerOutput(_windowed(config, sizes))
    if kind in _SHAPE_KEEPING:
        return LayerOutput(sizes)
    if kind == "Linear":
        return _last_replaced(config, sizes, "in_features", config.get("out_features"), "input features")
    if kind == "Embedding":
        return LayerOutput((*sizes, config.get("embedding_dim")))
    if kind == "EmbeddingBag":
        # A (B, L) batch of bags pools each row; a flat 1-D input is cut by `offsets` the data gives.
        return LayerOutput((sizes[0], config.get("embedding_dim")) if len(sizes) == 2 else None)
    if kind == "LayerNorm":
        return _last_replaced(config, sizes, "normalized_shape", sizes[-1] if sizes else None, "normalized features")
    if kind == "MultiheadAttention":
        return _last_replaced(config, sizes, "embed_dim", sizes[-1] if sizes else None, "embedding features")
    if kind in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        return _last_replaced(config, sizes, "d_model", sizes[-1] if sizes else None, "model features")
    if kind in _RECURRENT:
        return _recurrent(config, sizes)
    if kind in _CELLS:  # one step: (B, input_size) to (B, hidden_size), unbatched without B
        return _last_replaced(config, sizes, "input_size", config.get("hidden_size"), "input features") \
            if len(sizes) in (1, 2) else LayerOutput(None)
    if kind in _CONVOLUTIONS:
        spatial = _CONVOLUTIONS[kind]
        found = _channels(config, sizes, spatial, "in_channels", config.get("out_channels"))
        windowed = _windowed(config, sizes)
        if found.shape is None or windowed is None:
            return found
        return LayerOutput((*found.shape[:-spatial], *windowed[-spatial:]), contradiction=found.contradiction)
    if kind in _BATCH_NORMS:
        spatial = _BATCH_NORMS[kind]
        if spatial == 1 and len(sizes) == 2:
            return _channels(config, sizes, 0, "num_features", None)
        return _channels(config, sizes, spatial, "num_features", None)
    if kind == "GroupNorm":
        return _group_norm(config, sizes)
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


def _window_contradiction(config: LayerConfig, sizes: Sizes) -> Contradiction | None:
    """A spatial size shorter than the layer's window: torch computes an output size of 0 or
    less and raises (`MaxPool1d(4)` on 3 positions, after pooling has shrunk them)."""
    call = config.sized_call or config.built_by
    span = window_span(config.kind, call) if call is not None else None
    if span is None or len(sizes) not in (len(span) + 1, len(span) + 2):
        return None
    for offset, (size, needed) in enumerate(zip(sizes[-len(span):], span)):
        given = literal(size)
        if given is not None and given < needed:
            dim = len(sizes) - len(span) + offset
            return Contradiction(dim, f"at least {needed}", str(given), "positions for its window")
    return None


def _windowed(config: LayerConfig, sizes: Sizes) -> Sizes | None:
    """A convolution's or pooling's output with the input's channels, from the kernel, stride and
    padding arithmetic of `layer_sizes`, where the layer's window arguments are known integers
    (a spatial size is known where the input's is a literal)."""
    call = config.sized_call or config.built_by
    reshape = window_reshape(config.kind, call) if call is not None else None
    if reshape is None or not sizes:
        return None
    shape = reshape((1, *(literal(size) for size in sizes[1:])))
    if shape is None:
        return None
    return (sizes[0], *(None if size is None else str(size) for size in shape[1:]))


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
    return _first_difference(expected, state, tuple(f"{part} in the initial hidden state" for part in what))


def attention_input_contradiction(config: LayerConfig, position: int, sizes: Sizes) -> Contradiction | None:
    """Where a `MultiheadAttention`'s key (`position` 1) or value (2) cannot be what the layer
    projects: its last dim must be `kdim` / `vdim`, which are the embedding size unless given."""
    if config.kind != "MultiheadAttention" or position not in (1, 2) or not sizes:
        return None
    parameter, what = (("kdim", "key features"), ("vdim", "value features"))[position - 1]
    expected = config.get(parameter) or config.get("embed_dim")
    if differ(expected, sizes[-1]):
        return Contradiction(len(sizes) - 1, expected, sizes[-1], what)
    return None


def padding_mask_contradiction(config: LayerConfig, key: Sizes, mask: Sizes) -> Contradiction | None:
    """Where a `MultiheadAttention`'s `key_padding_mask` is not (batch, key length) for the key
    it is given ((S,) for an unbatched key): a padding mask built for another length."""
    if config.kind != "MultiheadAttention" or len(key) not in (2, 3):
        return None
    batch_first = config.get("batch_first", "False") == "True"
    if len(key) == 3:
        expected = (key[0], key[1]) if batch_first else (key[1], key[0])
    else:
        expected = (key[0],)
    if len(mask) != len(expected):
        return None
    whats = ("batch rows in the key padding mask", "key positions in the key padding mask")[-len(expected):]
    return _first_difference(expected, mask, whats)


def _first_difference(expected: Sizes, given: Sizes, whats: tuple[str, ...]) -> Contradiction | None:
    """The first dim where `given` cannot be `expected`, named by `whats` (one per dim)."""
    for dim, (wanted, size, what) in enumerate(zip(expected, given, whats)):
        if differ(wanted, size):
            return Contradiction(dim, wanted, size, what)
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


def _group_norm(config: LayerConfig, sizes: Sizes) -> LayerOutput:
    """(N, C, *) in, the same out; with its affine weights (the default), C must be `num_channels`
    (without them, any C that the groups divide passes)."""
    if len(sizes) < 2:
        return LayerOutput(None)
    if config.get("affine", "True") != "True":
        return LayerOutput(sizes)
    return _channels(config, sizes, len(sizes) - 2, "num_channels", None)


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


def flattened_sizes(sizes: Sizes, start: int, end: int | None = None) -> Sizes | None:
    """`sizes` with the dims from `start` to `end` (the last, by default) multiplied into one
    (None where one is not a literal)."""
    end = len(sizes) - 1 if end is None else end
    if not start <= end < len(sizes):
        return None
    kept = sizes[end + 1:]
    product = 1
    for size in sizes[start:end + 1]:
        if literal(size) is None:
            return (*sizes[:start], None, *kept)
        product *= literal(size)
    return (*sizes[:start], str(product), *kept)
