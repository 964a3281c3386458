"""Memory layout of tensors through permutes and views: which `.view()` merges cannot work.

A layout describes a tensor derived from a contiguous base by reordering ops (`permute`,
`transpose`, `t`, `T`, `mT`, `swapaxes`, `movedim`), size-1 insertions (`unsqueeze`, `x[:, None]`)
and `expand`. The base's rank may be unknown (an input, a matmul result): then every plausible
rank is tried. `view_merge_breaks(layout, args)` says whether a `.view(*args)` must merge
dimensions that are no longer adjacent and in order in memory (or merges a broadcast dimension
with a real one), under every reading of the view's arguments; when some reading is fine, or the
merged dimensions cannot be told, it answers False.

A `.contiguous()` or `.reshape()` gives a fresh contiguous base. Layouts are memoized per node
and answered at the point of the walk where the node stands (the owner computes assigned values
before their targets are rebound), so `x = x.transpose(1, 2); x = x.view(...)` is followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product as cartesian
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.names import positional_args

if TYPE_CHECKING:
    from torchlint.context import FileContext

_MAX_RANK = 6
REORDERING_METHODS = frozenset({"permute", "transpose", "t", "swapaxes", "swapdims", "movedim", "moveaxis", "expand"})
REORDERING_ATTRIBUTES = frozenset({"T", "mT"})
_SHAPE_METHODS = REORDERING_METHODS | {"view", "reshape", "contiguous", "unsqueeze", "squeeze"}

# One dimension of a materialized layout: its position in the base's memory order (None for an
# inserted size-1 dim or a new broadcast dim), whether it is broadcast (stride 0), its size symbol.
_Dim = tuple  # (int | None, bool, str | None)


@dataclass(frozen=True)
class Layout:
    base_rank: int | None  # None: unknown, try every plausible rank
    base_sizes: tuple[str | None, ...] | None
    ops: tuple[tuple, ...]
    # The base came out of `.squeeze()`: the code deals with size-1 dims we cannot see, and a
    # merge that looks impossible may only involve a size-1 dim (`x.squeeze(0).t().view(-1)`).
    unit_sizes_likely: bool = False

    @property
    def reordered(self) -> bool:
        return any(op[0] in ("permute", "transpose", "t", "T", "movedim", "expand") for op in self.ops)

    def then(self, op: tuple) -> "Layout":
        return Layout(self.base_rank, self.base_sizes, self.ops + (op,), self.unit_sizes_likely)

    def materialize(self, base_rank: int) -> list[_Dim] | None:
        sizes = self.base_sizes or (None,) * base_rank
        dims: list[_Dim] = [(i, False, sizes[i]) for i in range(base_rank)]
        for op in self.ops:
            dims = _apply(dims, op)
            if dims is None:
                return None
        return dims

    def candidates(self) -> list[list[_Dim]]:
        ranks = [self.base_rank] if self.base_rank is not None else range(1, _MAX_RANK + 1)
        found = []
        for rank in ranks:
            dims = self.materialize(rank)
            if dims is not None:
                found.append(dims)
        return found


def _norm(dim: int, rank: int) -> int | None:
    if dim < 0:
        dim += rank
    return dim if 0 <= dim < rank else None


def _apply(dims: list[_Dim], op: tuple) -> list[_Dim] | None:
    kind, rank = op[0], len(dims)
    if kind == "transpose":
        a, b = _norm(op[1], rank), _norm(op[2], rank)
        if a is None or b is None:
            return None
        dims = list(dims)
        dims[a], dims[b] = dims[b], dims[a]
        return dims
    if kind == "permute":
        perm = [_norm(d, rank) for d in op[1]]
        if len(perm) != rank or None in perm or len(set(perm)) != rank:
            return None
        return [dims[d] for d in perm]
    if kind == "movedim":
        source, target = _norm(op[1], rank), _norm(op[2], rank)
        if source is None or target is None:
            return None
        dims = list(dims)
        dims.insert(target, dims.pop(source))
        return dims
    if kind == "t":
        if rank > 2:
            return None
        return list(reversed(dims))
    if kind == "T":
        return list(reversed(dims))
    if kind == "unsqueeze":
        position = op[1] + rank + 1 if op[1] < 0 else op[1]
        if not 0 <= position <= rank:
            return None
        return dims[:position] + [(None, False, "1")] + dims[position:]
    if kind == "expand":
        sizes: tuple[str, ...] = op[1]
        if len(sizes) < rank:
            return None
        new = [(None, size != "1", size) for size in sizes[: len(sizes) - rank]]
        for dim, size in zip(dims, sizes[len(sizes) - rank:]):
            was_one = dim[2] == "1" or dim[0] is None
            if size not in ("-1", "1") and was_one:
                new.append((dim[0], True, size))
            else:
                new.append(dim)
        return new
    return None


def _arg_code(ctx: "FileContext", expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        return "-" + expr.expression.value
    if isinstance(expr, cst.Integer):
        return expr.value
    return ctx.code_for(expr).strip()


def _int_value(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value, 0)
    return None


def shape_args(call: cst.Call) -> list[cst.BaseExpression] | None:
    """The size arguments of `view`/`reshape`/`expand`: `(b, -1)` or `((b, -1))`; None when unknowable."""
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    values = [arg.value for arg in call.args]
    if len(values) == 1 and isinstance(values[0], (cst.Tuple, cst.List)):
        elements = values[0].elements
        if any(isinstance(element, cst.StarredElement) for element in elements):
            return None
        values = [element.value for element in elements]
    return values


def _factors(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _factors(expr.left) + _factors(expr.right)
    return [expr]


class Layouts:
    """Layouts of tensor expressions in one file; the owning rule forwards `leave_Assign`."""

    def __init__(self, ctx: "FileContext") -> None:
        self._ctx = ctx
        self._memo: dict[int, Layout | None] = {}
        # Sizes unpacked from a value's shape (`b, n, c = x.shape`), keyed by that value's node.
        self._unpacked: dict[int, tuple[str | None, ...]] = {}
        # Per enclosing function: products of sizes passed to `view`/`reshape` as one dimension.
        self._single_dims: list[set[str]] = [set()]

    @property
    def single_dims(self) -> set[str]:
        return self._single_dims[-1]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._single_dims.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._single_dims.pop()

    def note_shape_call(self, call: cst.Call, receiver: Layout | None) -> None:
        """Remember the products a `view`/`reshape` of a tensor in memory order uses as one dim
        (`q.contiguous().view(bsz * num_heads, -1, d)`). After a permute the product is more
        likely a merge of two dims, and is not remembered."""
        if receiver is not None and receiver.reordered:
            return
        args = shape_args(call)
        for arg in args or ():
            if isinstance(arg, cst.BinaryOperation):
                self._single_dims[-1].add(_arg_code(self._ctx, arg))

    def leave_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in _SHAPE_METHODS:
                self.layout(value)
        elif isinstance(value, cst.Attribute) and value.attr.value in REORDERING_ATTRIBUTES:
            self.layout(value)
        self._record_unpacked_shape(node)

    def _record_unpacked_shape(self, node: cst.Assign) -> None:
        """`b, n, c = x.shape` / `x.size()`: x has rank 3 with those sizes."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            return
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" and not value.args:
            owner = value.func.value
        elif isinstance(value, cst.Attribute) and value.attr.value == "shape":
            owner = value.value
        else:
            return
        elements = node.targets[0].target.elements
        if any(isinstance(element, cst.StarredElement) for element in elements):
            return
        sizes = tuple(
            element.value.value if isinstance(element.value, cst.Name) and element.value.value != "_" else None
            for element in elements
        )
        key = self._value_key(owner)
        if key is not None:
            self._unpacked[key] = sizes

    def _value_key(self, expr: cst.BaseExpression) -> int | None:
        if isinstance(expr, cst.Name):
            value = self._ctx.values.value_of(expr.value)
            return id(value) if value is not None else None
        return None

    def layout(self, expr: cst.BaseExpression) -> Layout | None:
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None
        found = self._compute(expr)
        self._memo[key] = found
        return found

    def _compute(self, expr: cst.BaseExpression) -> Layout | None:
        if isinstance(expr, cst.Name):
            value = self._ctx.values.value_of(expr.value)
            if value is None:
                return None
            sizes = self._unpacked.get(id(value))
            found = self.layout(value) if isinstance(value, cst.BaseExpression) else None
            if sizes is not None and (found is None or (not found.ops and found.base_rank is None)):
                return Layout(len(sizes), sizes, ())
            return found
        if isinstance(expr, cst.Attribute):
            if expr.attr.value not in REORDERING_ATTRIBUTES:
                return None
            source = self._source(expr.value)
            return source.then(("T",) if expr.attr.value == "T" else ("transpose", -2, -1))
        if isinstance(expr, cst.Subscript):
            return self._indexed(expr)
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
            return None
        if self._ctx.callee(expr) is not None:
            return None  # torch.transpose(...) and other module functions: not followed
        method = expr.func.attr.value
        receiver = expr.func.value
        if method == "squeeze":
            return Layout(None, None, (), unit_sizes_likely=True)
        if method in ("view", "reshape"):
            args = shape_args(expr)
            if args is None or (len(args) == 1 and _int_value(args[0]) is None):
                return Layout(None, None, ())
            return Layout(len(args), tuple(_arg_code(self._ctx, arg) for arg in args), ())
        if method == "contiguous":
            source = self.layout(receiver)
            if source is not None:
                shapes = source.candidates()
                if len(shapes) == 1:
                    return Layout(len(shapes[0]), tuple(dim[2] for dim in shapes[0]), ())
            return Layout(None, None, ())
        if method not in REORDERING_METHODS and method != "unsqueeze":
            return None
        ints = [_int_value(arg.value) for arg in positional_args(expr)]
        if len(ints) != len(expr.args):
            if method != "expand":
                return None
        source = self._source(receiver)
        if method == "permute":
            if len(ints) == 1 and isinstance(expr.args[0].value, (cst.Tuple, cst.List)):
                ints = [_int_value(element.value) for element in expr.args[0].value.elements]
            if not ints or None in ints:
                return None
            return source.then(("permute", tuple(ints)))
        if method in ("transpose", "swapaxes", "swapdims"):
            if len(ints) != 2 or None in ints:
                return None
            return source.then(("transpose", ints[0], ints[1]))
        if method in ("movedim", "moveaxis"):
            if len(ints) != 2 or None in ints:
                return None
            return source.then(("movedim", ints[0], ints[1]))
        if method == "t":
            return source.then(("t",)) if not expr.args else None
        if method == "unsqueeze":
            if len(ints) != 1 or ints[0] is None:
                return None
            return source.then(("unsqueeze", ints[0]))
        args = shape_args(expr)
        if args is None or (len(args) == 1 and _int_value(args[0]) is None):
            return None
        return source.then(("expand", tuple(_arg_code(self._ctx, arg) for arg in args)))

    def _source(self, receiver: cst.BaseExpression) -> Layout:
        """The receiver's layout; an unknown receiver is taken as a contiguous base of unknown rank."""
        found = self.layout(receiver)
        return found if found is not None else Layout(None, None, ())

    def _indexed(self, node: cst.Subscript) -> Layout | None:
        """`x[:, None]`, `x[..., None]`: size-1 insertions; any other indexing is not followed."""
        elements = node.slice
        positions_from_start, positions_from_end, seen_ellipsis, kept = [], [], False, 0
        for element in elements:
            index = element.slice
            if isinstance(index, cst.Slice):
                if index.lower is not None or index.upper is not None or index.step is not None:
                    return None
                kept += 1
                continue
            value = index.value if isinstance(index, cst.Index) else None
            if isinstance(value, cst.Name) and value.value == "None":
                (positions_from_end if seen_ellipsis else positions_from_start).append(kept)
                kept += 1
            elif isinstance(value, cst.Ellipsis) and not seen_ellipsis:
                seen_ellipsis, kept = True, 0
            else:
                return None
        if not positions_from_start and not positions_from_end:
            return None
        layout = self._source(node.value)
        for position in positions_from_start:
            layout = layout.then(("unsqueeze", position))
        if seen_ellipsis:
            for position in positions_from_end:
                layout = layout.then(("unsqueeze", position - kept))
        elif positions_from_end:
            return None
        return layout


def _allowed_arities(
    ctx: "FileContext", arg: cst.BaseExpression, flexible: bool, single_dims: frozenset[str] | set[str]
) -> tuple[int, ...]:
    value = _int_value(arg)
    if value == 1:
        return (0, 1)
    if value == -1:
        return tuple(range(1, _MAX_RANK + 1))
    if value is not None:
        return (1,)
    named = [factor for factor in _factors(arg) if _int_value(factor) is None]
    if len(named) >= 2:
        # `h * d` merges an h and a d dim, unless this very product was already used as one dim
        # (`x.view(bsz * num_heads, -1, d)` earlier in the file).
        if _arg_code(ctx, arg) in single_dims:
            return (1,)
        return (len(named),)
    return tuple(range(1, _MAX_RANK + 1)) if flexible else (1,)


def _group_breaks(group: list[_Dim]) -> bool:
    real = [dim for dim in group if dim[2] != "1" and (dim[0] is not None or dim[1])]
    if len(real) < 2:
        return False
    expanded = [dim[1] for dim in real]
    if any(expanded):
        return not all(expanded)
    order = [dim[0] for dim in real]
    return any(b != a + 1 for a, b in zip(order, order[1:]))


def _matches(ctx: "FileContext", arg: cst.BaseExpression, group: list[_Dim]) -> bool:
    """The argument is written as the product of the group's known sizes (`h * d` for (h, d))."""
    sizes = [dim[2] for dim in group if dim[2] != "1"]
    if not sizes or any(size is None for size in sizes):
        return False
    sizes.sort()
    factors = sorted(code for code in (_arg_code(ctx, factor) for factor in _factors(arg)) if code != "1")
    return factors == sizes


def view_merge_breaks(
    ctx: "FileContext", layout: Layout, args: list[cst.BaseExpression], single_dims: frozenset[str] | set[str] = frozenset()
) -> bool:
    """True when every likely reading of `.view(*args)` on `layout` merges non-adjacent dimensions.

    A reading assigns each argument a run of consecutive dimensions. Where sizes are known by
    name (`b, n, c = x.shape`), only the readings that match the most arguments to the sizes they
    are written as are kept.
    """
    if not layout.reordered or not args or layout.unit_sizes_likely:
        return False
    has_minus_one = any(_int_value(arg) == -1 for arg in args)
    readings: list[tuple[int, bool]] = []
    for dims in layout.candidates():
        rank = len(dims)
        flexible = layout.base_rank is not None and not has_minus_one
        options = [_allowed_arities(ctx, arg, flexible, single_dims) for arg in args]
        for arities in cartesian(*options):
            if sum(arities) != rank:
                continue
            start, breaks, score = 0, False, 0
            for arg, arity in zip(args, arities):
                group = dims[start:start + arity]
                breaks = breaks or _group_breaks(group)
                score += _matches(ctx, arg, group)
                start += arity
            readings.append((score, breaks))
    if not readings:
        return False
    best = max(score for score, _ in readings)
    return all(breaks for score, breaks in readings if score == best)
