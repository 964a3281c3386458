"""Memory layout of tensors through permutes and views: which `.view()` merges cannot work.

A layout describes a tensor derived from a contiguous base by reordering ops (`permute`,
`transpose`, `t`, `T`, `mT`, `swapaxes`, `movedim`), size-1 insertions (`unsqueeze`, `x[:, None]`)
and `expand`. The base's rank may be unknown (an input, a matmul result): then every plausible
rank is tried. `view_merge_breaks(layout, args)` says whether a `.view(*args)` must merge
dimensions that are no longer adjacent and in order in memory (or merges a broadcast dimension
with a real one), under every reading of the view's arguments; when some reading is fine, or the
merged dimensions cannot be told, it answers False.

A `.contiguous()` or `.reshape()` gives a fresh contiguous base. The tensor-facts interpreter
(`analysis/tensor_facts/`) carries a `Layout` in the facts of each tensor it follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import product as cartesian
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.names import dotted_name, integer

if TYPE_CHECKING:
    from torchlint.analysis.checked_file import CheckedFile

_MAX_RANK = 6
_REORDERING_OPS = frozenset({"permute", "transpose", "t", "T", "movedim", "expand"})

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
    # The call that last reordered the dimensions, for the finding's evidence (not a fact: two
    # layouts that differ only here are the same layout).
    reordered_by: cst.CSTNode | None = field(default=None, compare=False, repr=False)

    @property
    def reordered(self) -> bool:
        return any(op[0] in _REORDERING_OPS for op in self.ops)

    @property
    def expanded(self) -> bool:
        return any(op[0] == "expand" for op in self.ops)

    def then(self, op: tuple, by: cst.CSTNode | None = None) -> "Layout":
        """This layout after `op`, done by the call `by`."""
        reordered_by = by if by is not None and op[0] in _REORDERING_OPS else self.reordered_by
        return Layout(self.base_rank, self.base_sizes, self.ops + (op,), self.unit_sizes_likely, reordered_by)

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
    if kind == "slice":
        # `x[:k]` along this dim: same strides and rank, the size what the slice keeps of it
        # where its bounds are known integers (op[2]), else no longer known.
        position = _norm(op[1], rank)
        if position is None:
            return None
        dims = list(dims)
        dims[position] = (dims[position][0], dims[position][1], sliced_size(dims[position][2], op[2]))
        return dims
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


def arg_code(ctx: "CheckedFile", expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        return "-" + expr.expression.value
    if isinstance(expr, cst.Integer):
        return expr.value
    # A name or attribute chain (`B`, `self.heads`), most sizes, without generating code for it.
    return dotted_name(expr) or ctx.code_for(expr).strip()


def sliced_size(size: str | None, bounds: tuple[int | None, int | None] | None) -> str | None:
    """The size a slice without step keeps of a dim, from its known bounds (None: absent), as
    Python's slicing clamps them: `[:24]` of 16 keeps 16; None where either is not known, and
    where the slice would keep nothing of a dim that has something (`sdf[:, 1:]` of an `sdf`
    annotated `(n, 1)`): code that slices a dim so expects it longer, as the annotation most
    often forgot a dim."""
    known = integer(size) if size is not None and size.isdigit() else None
    if known is None or bounds is None:
        return None
    kept = len(range(known)[slice(*bounds)])
    return str(kept) if kept or not known else None


def int_value(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return integer(expr.value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
        value = integer(expr.expression.value)
        return None if value is None else -value
    return None


def shape_args(call: cst.Call, offset: int = 0) -> list[cst.BaseExpression] | None:
    """The size arguments of `view`/`reshape`/`expand`/`repeat`: `(b, -1)` or `((b, -1))`, after
    the first `offset` arguments (the input of `torch.tile(x, (1, 2))`); None when unknowable."""
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    values = [arg.value for arg in call.args[offset:]]
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


def _allowed_arities(
    ctx: "CheckedFile", arg: cst.BaseExpression, flexible: bool, single_dims: frozenset[str] | set[str]
) -> tuple[int, ...]:
    value = int_value(arg)
    if value == 1:
        return (0, 1)
    if value == -1:
        return tuple(range(1, _MAX_RANK + 1))
    if value is not None:
        # A literal size can be a product of known sizes (`.view(2, 12)` of a (2, 4, 3) tensor).
        return tuple(range(1, _MAX_RANK + 1)) if flexible else (1,)
    named = [factor for factor in _factors(arg) if int_value(factor) is None]
    if len(named) >= 2:
        # `h * d` merges an h and a d dim, unless this very product was already used as one dim
        # (`x.view(bsz * num_heads, -1, d)` earlier in the file).
        if arg_code(ctx, arg) in single_dims:
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


def _matches(ctx: "CheckedFile", arg: cst.BaseExpression, group: list[_Dim]) -> bool:
    """The argument is written as the product of the group's known sizes (`h * d` for (h, d))."""
    sizes = [dim[2] for dim in group if dim[2] != "1"]
    if not sizes or any(size is None for size in sizes):
        return False
    literal = int_value(arg)
    values = [integer(size) for size in sizes]
    if literal is not None and None not in values:
        return math.prod(values) == literal
    sizes.sort()
    factors = sorted(code for code in (arg_code(ctx, factor) for factor in _factors(arg)) if code != "1")
    return factors == sizes


def view_merge_breaks(
    ctx: "CheckedFile", layout: Layout, args: list[cst.BaseExpression], single_dims: frozenset[str] | set[str] = frozenset()
) -> bool:
    """True when every likely reading of `.view(*args)` on `layout` merges non-adjacent dimensions.

    A reading assigns each argument a run of consecutive dimensions. Where sizes are known by
    name (`b, n, c = x.shape`), only the readings that match the most arguments to the sizes they
    are written as are kept.
    """
    if not layout.reordered or not args or layout.unit_sizes_likely:
        return False
    has_minus_one = any(int_value(arg) == -1 for arg in args)
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
