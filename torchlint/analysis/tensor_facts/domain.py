"""The abstract values of the tensor-facts interpretation, and how two of them join.

A `TensorFacts` is what is known about one tensor: its device, its shape and memory layout
(`Layout`: rank, symbolic sizes, reorderings since the last contiguous base), its dtype, whether
it requires grad, and the call that put it on the default device or the CPU (where `device=`
belongs). Other values the interpretation follows: Python numbers, devices, dtypes, modules
(with the device their parameters are on), the file's functions held in names, fixed-length
sequences (tuples, `chunk` results, named tuples), iterables of tensors (`model.parameters()`, a
DataLoader) and `UNKNOWN`.

Joins keep only what both sides know: they are used where control flow merges.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.layouts import Layout
from torchlint.analysis.project_facts import Note

if TYPE_CHECKING:
    from torchlint.analysis.layer_shapes import LayerConfig


class Device(enum.Enum):
    UNKNOWN = "unknown"
    # Created by a factory without `device=` (or `torch.from_numpy`): on the default device, CPU.
    DEFAULT = "default"
    # Explicitly placed on the CPU (`.cpu()`, `device="cpu"`).
    CPU = "cpu"
    # Explicitly on an accelerator: `.cuda()`, `"cuda"`/`"mps"`, `torch.device("cuda")`, or a
    # device chosen as `"cuda" if torch.cuda.is_available() else "cpu"`.
    ACCELERATOR = "accelerator"
    # On the working device chosen at run time: `.to(device)` with a parameter or attribute named
    # device, `torch.device(...)` of a computed name (the GPU when there is one).
    TARGET = "target"
    # On the device of an input whose own device is unknown (`device=x.device`, `.to(x.device)`
    # for an `x` from a caller or from numpy): the same device as `x`, which may be the CPU.
    INPUT = "input"
    # On the device of the Module whose method this is: its `forward()` inputs, parameters,
    # buffers and submodule outputs (the GPU once the model is moved there).
    MODULE = "module"
    # Placed on one path only: moved in one branch (`if use_cuda: x = x.cuda()`) and left where it
    # was in the other. Where that branch runs, it meets what is placed nowhere as any GPU tensor does.
    CONDITIONAL = "conditional"

    @property
    def is_placed(self) -> bool:
        """On the accelerator, the working device or the module's device (not the default device),
        on every path or on one."""
        return self in (Device.ACCELERATOR, Device.TARGET, Device.MODULE, Device.CONDITIONAL)

    @property
    def follows_input(self) -> bool:
        """Placed, or on an input's device: a tensor created on the default device must not meet it."""
        return self.is_placed or self is Device.INPUT


def join_devices(first: Device, second: Device) -> Device:
    if first is second:
        return first
    if Device.CONDITIONAL in (first, second) or first.is_placed != second.is_placed:
        return Device.CONDITIONAL
    if first.is_placed and second.is_placed:
        return Device.TARGET
    if first.follows_input and second.follows_input:
        return Device.INPUT
    return Device.UNKNOWN


@dataclass(frozen=True)
class TensorFacts:
    device: Device = Device.UNKNOWN
    # Shape and memory order; None: nothing known (taken as a contiguous base of unknown rank).
    layout: Layout | None = None
    # True: known 0-dim; False: known to have at least one dimension; None: unknown.
    scalar: bool | None = None
    dtype: str | None = None
    requires_grad: bool = False
    # The call that put a DEFAULT or CPU tensor there: a factory, `.cpu()`, a same-file helper.
    origin: cst.Call | None = field(default=None, repr=False)
    # A value of unknown kind that went through a tensor-only step (`batch.to(device)`,
    # `x.permute(...)`): in an op with a tensor it is a tensor, but it may be a module or a batch.
    maybe: bool = False
    # A batch from a DataLoader whose dataset and collate function place nothing: on the CPU as
    # loaded (with `device` DEFAULT until the code moves it).
    loaded: bool = False
    # The tensor holds the values of this activation ("softmax", "log_softmax", "sigmoid", or
    # "logits": the raw scores of a final `nn.Linear`):
    # made by it, or by ops that keep values (indexing, views, gather, moves), also when a
    # helper, a method or a model's `forward` of this file returns it.
    activation: str | None = None
    # The call that took that activation, for the finding's evidence (not a fact).
    activated_by: cst.CSTNode | Note | None = field(default=None, compare=False, repr=False)  # a Note: in another file
    # For a CONDITIONAL tensor: the test of the `if` that placed it and the branch (`(code,
    # True)` for its body), so that a later `if` on the same test knows where it is.
    placed_when: tuple[str, bool] | None = None
    # For a parameter a caller passes on the GPU: that call (a project `Note`), for the evidence.
    placed_by: object = field(default=None, compare=False, repr=False)
    # The call that gave the tensor its dtype (`torch.ByteTensor(...)`, `.byte()`), for a
    # finding's evidence (not a fact).
    typed_by: cst.CSTNode | None = field(default=None, compare=False, repr=False)
    # A model's or layer's (N, 1) output (a critic's values, one logit per row): the call, kept
    # through ops on it alone, for the finding that pairs it with an (N,) tensor (not a fact).
    column_of: cst.CSTNode | None = field(default=None, compare=False, repr=False)

    @property
    def rank(self) -> int | None:
        if self.scalar:
            return 0
        if self.layout is None or self.layout.base_rank is None:
            return None
        shapes = self.layout.candidates()
        return len(shapes[0]) if len(shapes) == 1 else None

    def moved(self, device: Device, origin: cst.Call | None = None) -> "TensorFacts":
        return replace(self, device=device, origin=origin)


@dataclass(frozen=True)
class Number:
    """A Python int/float/bool; `code` is its text when it names a size (`B`, `x.size(1)`)."""

    code: str | None = None


@dataclass(frozen=True)
class DeviceValue:
    device: Device


@dataclass(frozen=True)
class DtypeValue:
    name: str | None


@dataclass(frozen=True)
class ModuleValue:
    """An `nn.Module` instance; `kind` is its class when known (`torch.nn.LSTM`, `Net`)."""

    device: Device = Device.UNKNOWN
    kind: str | None = None
    # A parameter of the function (`def evaluate(model, x)`): its caller may run it under
    # `no_grad`, so whether its outputs require grad is not known.
    from_caller: bool = False
    # As for a tensor: the test of the `if` whose body moved a CONDITIONAL module.
    placed_when: tuple[str, bool] | None = None
    # A `torch.nn` layer's constructor sizes (`Linear(32, 64)`), for the shape of its output.
    config: LayerConfig | None = None
    # An `nn.ModuleList`'s layers, joined: what iterating over it or indexing it gives.
    element: "ModuleValue | None" = None
    # For an instance of a Module class of the file: what its construction passed, as
    # `((keyword or None, value), ...)` (None where unknown, or where `*args` passed more).
    made_with: tuple | None = None
    made_at: cst.Call | None = field(default=None, compare=False, repr=False)  # that construction


@dataclass(frozen=True)
class ObjectValue:
    """An instance of a plain class of the file (not a Module, not a dataset): a replay buffer, a
    running statistic. Its methods give what they return."""

    kind: str


@dataclass(frozen=True)
class FunctionValue:
    """A top-level function of the file held in a name, or one of several chosen on different
    paths (`schedule = linear_betas` in one branch, `cosine_betas` in another): calling it gives
    what they return, joined."""

    names: frozenset[str]


# How many functions a name may be one of before nothing is known of it.
_MAX_FUNCTIONS = 8


@dataclass(frozen=True)
class Sequence:
    """A tuple of known length: `(a, b)`, `x.chunk(3)`, `x.max(dim=1)`, `x.shape`."""

    items: tuple["Value", ...]


@dataclass(frozen=True)
class Iterable:
    """Something whose elements are all `element`: `model.parameters()`, a DataLoader, a list of
    tensors; `length`: how many, where a comprehension over something of known size tells."""

    element: "Value"
    # Keyword-only: `Collected` adds fields that its callers pass by position.
    length: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class Collected(Iterable):
    """A list the code fills (`items.append(t)`, `items.extend(ts)`): the join of its tensors,
    where those placed are, and the calls that made the ones it holds on the default device.
    `torch.stack` / `torch.cat` need every tensor on one device, a 0-dim one too."""

    placed: Device | None = None
    on_default: tuple[cst.Call, ...] = field(default=(), repr=False)

    def adding(self, item: "Value") -> "Collected":
        if not isinstance(item, TensorFacts):
            return _join_collected(self, Collected(item))
        made_here = item.device in (Device.DEFAULT, Device.CPU) and item.origin is not None
        return _join_collected(self, Collected(
            item, item.device if item.device.is_placed else None, (item.origin,) if made_here else ()))


def _join_collected(first: Collected, second: Collected) -> Collected:
    placed = first.placed if second.placed is None else (
        second.placed if first.placed is None else join_devices(first.placed, second.placed))
    extra = tuple(origin for origin in second.on_default if all(origin is not seen for seen in first.on_default))
    return Collected(join(first.element, second.element), placed, first.on_default + extra)


class _Unknown:
    _instance: "_Unknown | None" = None

    def __repr__(self) -> str:
        return "UNKNOWN"


class _Nothing:
    """The element of a list nothing has been put in yet."""

    def __repr__(self) -> str:
        return "NOTHING"


UNKNOWN = _Unknown()
NOTHING = _Nothing()
NUMBER = Number()
Value = TensorFacts | Number | DeviceValue | DtypeValue | ModuleValue | ObjectValue | FunctionValue | Sequence \
    | Iterable | _Unknown


def _join_layouts(first: Layout | None, second: Layout | None) -> Layout | None:
    """Two layouts that differ keep only their common rank: a base of that rank, as `None` is one
    of unknown rank (a reordering seen on one path only is not claimed), with the sizes both
    paths agree on (`(8, 64)` joined with `(?, 64)`, a loop's state after a step, is `(?, 64)`)."""
    if first == second:
        return first
    if first is None or second is None:
        return None
    rank_first, rank_second = TensorFacts(layout=first).rank, TensorFacts(layout=second).rank
    if rank_first is None or rank_first != rank_second:
        return None
    if first.ops or second.ops or first.base_sizes is None or second.base_sizes is None:
        return Layout(rank_first, None, ())
    agreed = tuple(size if size == other else None for size, other in zip(first.base_sizes, second.base_sizes))
    return Layout(rank_first, agreed if any(size is not None for size in agreed) else None, ())


def join_facts(first: TensorFacts, second: TensorFacts) -> TensorFacts:
    if first == second:
        return first
    return TensorFacts(
        device=join_devices(first.device, second.device),
        layout=_join_layouts(first.layout, second.layout),
        scalar=first.scalar if first.scalar == second.scalar else None,
        dtype=first.dtype if first.dtype == second.dtype else None,
        requires_grad=first.requires_grad and second.requires_grad,
        origin=first.origin if first.origin is second.origin else None,
        maybe=first.maybe or second.maybe,
        loaded=first.loaded and second.loaded,
        # Both paths: `probs if not self.training else logits` is no softmax output in training.
        activation=first.activation if first.activation == second.activation else None,
        activated_by=first.activated_by if first.activation == second.activation else None,
        placed_when=first.placed_when if first.placed_when == second.placed_when else None,
        placed_by=first.placed_by if first.placed_by is not None else second.placed_by,
        typed_by=first.typed_by if first.dtype == second.dtype and first.typed_by is second.typed_by else None,
    )


def join(first: Value, second: Value) -> Value:
    """What is known of a value that is `first` on one path and `second` on another."""
    if first is second or first == second or second is NOTHING:
        return first
    if first is NOTHING:
        return second  # nothing on one path (an empty list's element): what the other has
    if isinstance(first, TensorFacts) and isinstance(second, TensorFacts):
        return join_facts(first, second)
    if isinstance(first, Number) and isinstance(second, Number):
        return first if first == second else NUMBER
    if isinstance(first, DeviceValue) and isinstance(second, DeviceValue):
        return DeviceValue(join_devices(first.device, second.device))
    if isinstance(first, ModuleValue) and isinstance(second, ModuleValue):
        element = join(first.element, second.element) if first.element and second.element else None
        return ModuleValue(join_devices(first.device, second.device), first.kind if first.kind == second.kind else None,
                           first.from_caller and second.from_caller,
                           first.placed_when if first.placed_when == second.placed_when else None,
                           first.config if first.config == second.config else None,
                           element if isinstance(element, ModuleValue) else None,
                           first.made_with if first.made_with == second.made_with else None,
                           first.made_at if first.made_with == second.made_with else None)
    if isinstance(first, FunctionValue) and isinstance(second, FunctionValue):
        names = first.names | second.names
        return FunctionValue(names) if len(names) <= _MAX_FUNCTIONS else UNKNOWN
    if isinstance(first, Sequence) and isinstance(second, Sequence) and len(first.items) == len(second.items):
        return Sequence(tuple(join(a, b) for a, b in zip(first.items, second.items)))
    if isinstance(first, (Collected, Sequence)) and isinstance(second, (Collected, Sequence)) and (
            isinstance(first, Collected) or isinstance(second, Collected)):
        # A list filled on one path and left empty (`[]`) on another.
        empty = Collected(NOTHING)
        sides = [side if isinstance(side, Collected) else (empty if side == Sequence(()) else None) for side in (first, second)]
        if None not in sides:
            return _join_collected(*sides)
    if isinstance(first, Iterable) and isinstance(second, Iterable):
        return Iterable(join(first.element, second.element))
    return UNKNOWN


def element_of(value: Value) -> Value:
    """What iterating over `value` yields (the join of a sequence's items)."""
    if isinstance(value, Iterable):
        return value.element
    if isinstance(value, ModuleValue) and value.element is not None:
        return replace(value.element, device=value.device)  # the layers are where the list was moved
    if isinstance(value, Sequence) and value.items:
        found = value.items[0]
        for item in value.items[1:]:
            found = join(found, item)
        return found
    if isinstance(value, TensorFacts):
        # A row of a softmax output is a distribution too.
        return TensorFacts(device=value.device, dtype=value.dtype, requires_grad=value.requires_grad, loaded=value.loaded,
                           placed_when=value.placed_when, placed_by=value.placed_by, activation=value.activation,
                           activated_by=value.activated_by)
    return UNKNOWN


def unloaded(value: Value) -> Value:
    """`value` with its DataLoader batches of unknown placement (the code moves them somewhere)."""
    if isinstance(value, TensorFacts) and value.loaded:
        return replace(value, device=Device.UNKNOWN, loaded=False)
    if isinstance(value, Sequence):
        return Sequence(tuple(unloaded(item) for item in value.items))
    if isinstance(value, Iterable):
        return Iterable(unloaded(value.element))
    return value


def holds_loaded(value: Value) -> bool:
    if isinstance(value, TensorFacts):
        return value.loaded
    if isinstance(value, Sequence):
        return any(holds_loaded(item) for item in value.items)
    if isinstance(value, Iterable):
        return holds_loaded(value.element)
    return False


def unpack(value: Value, count: int) -> list[Value]:
    """The values bound by unpacking `value` into `count` targets."""
    if isinstance(value, Sequence):
        if len(value.items) == count:
            return list(value.items)
        return [UNKNOWN] * count
    if isinstance(value, (Iterable, TensorFacts)):
        return [element_of(value)] * count
    return [UNKNOWN] * count
