"""Which ops cannot work on operands whose sizes the tensor-facts model knows.

The model's sizes are the code that gave them (`"4"`, `"B"`, `"T * C"`, from a factory, a
`view`, `B, T, C = x.shape`). Two sizes disagree only when both are integer literals and differ;
the same symbol is the same size, and two different symbols may be equal, so they never
disagree. An element count compares the products of the factors left once the symbols common to
both sides cancel: only literals may remain.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import libcst as cst

from torchlint.analysis.names import integer
from torchlint.analysis.tensor_facts.domain import TensorFacts

# The arithmetic operators that broadcast their tensor operands.
BROADCASTING_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)

_FACTOR = re.compile(r"^[A-Za-z_][A-Za-z_0-9.]*$|^\d+$")


def known_sizes(facts) -> tuple[str | None, ...] | None:
    """The sizes of a tensor of one known rank, as code (None where a size is unknown)."""
    if not isinstance(facts, TensorFacts) or facts.layout is None or facts.maybe:
        return None
    shapes = facts.layout.candidates()
    if len(shapes) != 1:
        return None
    return tuple(dim[2] for dim in shapes[0])


def literal(size: str | None) -> int | None:
    return integer(size) if size is not None and size.isdigit() else None


def differ(first: str | None, second: str | None) -> bool:
    """Two sizes that cannot be equal: unequal integer literals."""
    a, b = literal(first), literal(second)
    return a is not None and b is not None and a != b


def cannot_broadcast(first: str | None, second: str | None) -> bool:
    return differ(first, second) and literal(first) != 1 and literal(second) != 1


def class_target_conflict(scores: tuple, target: tuple, indices: bool) -> tuple[int, str, str] | None:
    """(target dim, size the scores need there, the target's size) for cross entropy / NLL:
    class indices have the scores' shape without the class dim 1, `(N, C, d1...)` -> `(N, d1...)`;
    probabilities have the scores' shape, unless the target is known to hold `indices` (NLL's
    always do, and an integer target's). A rank that fits none is reported at dim -1."""
    if len(target) == len(scores) and not indices:
        expected = scores
    elif len(target) == len(scores) - 1 and len(scores) >= 2:
        expected = (scores[0], *scores[2:])
    elif len(scores) < 2:
        return None
    else:
        return (-1, f"rank {len(scores) - 1}" if indices else f"rank {len(scores) - 1} or {len(scores)}",
                f"rank {len(target)}")
    position = next((i for i, pair in enumerate(zip(expected, target)) if differ(*pair)), None)
    return None if position is None else (position, expected[position], target[position])


def silent_broadcast(prediction: tuple, target: tuple) -> tuple | None:
    """The shape an elementwise loss broadcasts a prediction and a target of different shapes to
    (`(N, 1)` and `(N,)` give `(N, N)`), when the code shows they differ; None otherwise."""
    if len(prediction) == len(target) and not any(differ(a, b) for a, b in zip(prediction, target)):
        return None
    if broadcast_conflict(prediction, target) is not None:
        return None  # not silent: it raises, as other ops do
    longer, shorter = (prediction, target) if len(prediction) >= len(target) else (target, prediction)
    padded = ("1",) * (len(longer) - len(shorter)) + tuple(shorter)
    result = tuple(b if a == "1" else a for a, b in zip(longer, padded))
    if len(prediction) != len(target) and not any(literal(size) == 1 for size in (*prediction, *target)):
        return None  # `(N, C)` against `(C,)`: broadcasting a row on purpose
    return result


def fed_examples(ctx, function: cst.FunctionDef) -> bool:
    """At the visit of `function`: the file calls it (a top-level function) or the model of its
    class (a method) with arguments, so the tensor-facts model may know its shapes from them
    (`model(torch.randn(4, 10, 32))`, `train(model, loader)`)."""
    ancestors = ctx.ancestors
    holder = ancestors[-2] if len(ancestors) >= 2 else None
    if isinstance(holder, cst.ClassDef):
        return ctx.tensors.has_examples(holder.name.value)
    return isinstance(ancestors[-1] if ancestors else None, cst.Module) and ctx.tensors.has_examples(function.name.value)


def brief_code(ctx, node: cst.CSTNode, limit: int = 40) -> str:
    """The source of `node` on one line, cut to `limit` characters, to name it in a message."""
    written = " ".join(ctx.module.code_for_node(node).split())
    return written if len(written) <= limit else written[: limit - 3] + "..."


def show(sizes: tuple[str | None, ...]) -> str:
    inner = ", ".join(size if size is not None else "?" for size in sizes)
    return f"({inner},)" if len(sizes) == 1 else f"({inner})"


def _factors(sizes) -> Counter | None:
    """The factors of a product of sizes (`"T * C"` counts T and C); None when one is unknown."""
    found: Counter = Counter()
    for size in sizes:
        if size is None:
            return None
        for factor in size.split("*"):
            factor = factor.strip()
            if not _FACTOR.match(factor):
                return None
            if factor != "1":
                found[factor] += 1
    return found


def element_count_mismatch(have: tuple[str | None, ...], want: list[str]) -> tuple[int, int] | None:
    """(elements the tensor has, elements the view asks for) when they cannot agree, after the
    common symbols cancel (`B`, `T`); a `-1` in `want`, or one symbol only `want` has, asks for
    any multiple of the rest."""
    infer = want.count("-1")
    if infer > 1:
        return None
    have_factors, want_factors = _factors(have), _factors([size for size in want if size != "-1"])
    if have_factors is None or want_factors is None:
        return None
    # Only symbols cancel: literal factors are counted whole, so the message gives real counts.
    common = Counter({factor: count for factor, count in (have_factors & want_factors).items() if literal(factor) is None})
    have_left, want_left = have_factors - common, want_factors - common
    # One symbol left in the new shape alone (`view(B, 1, H, W)`, B unknown) may be any size, as
    # a -1 may: the count works only if the rest divides it.
    symbols = [factor for factor in want_left if literal(factor) is None]
    if len(symbols) == 1 and want_left[symbols[0]] == 1 and not infer:
        want_left, infer = want_left - Counter({symbols[0]: 1}), 1
    if any(literal(factor) is None for factor in (*have_left, *want_left)):
        return None
    have_count = math.prod(literal(factor) ** count for factor, count in have_left.items())
    want_count = math.prod(literal(factor) ** count for factor, count in want_left.items())
    if have_count == 0 or want_count == 0:
        return None
    if infer:
        return None if have_count % want_count == 0 else (have_count, want_count)
    return None if have_count == want_count else (have_count, want_count)


def broadcast_conflict(first: tuple, second: tuple) -> tuple[int, str, str] | None:
    """(dim counted from the right, size, size) of the first pair of sizes that cannot broadcast."""
    for offset in range(1, min(len(first), len(second)) + 1):
        if cannot_broadcast(first[-offset], second[-offset]):
            return offset, first[-offset], second[-offset]
    return None


def matmul_conflict(first: tuple, second: tuple) -> tuple[str, str] | None:
    """The inner sizes of `first @ second` when they differ."""
    if not first or not second:
        return None
    inner = second[-2] if len(second) >= 2 else second[0]
    return (first[-1], inner) if differ(first[-1], inner) else None


def batch_conflict(first: tuple, second: tuple, broadcast: bool) -> tuple[str, str] | None:
    """The batch sizes (all but the last two dims) of a batched matrix product of two tensors of
    rank 3 or more that cannot go together: `torch.matmul` broadcasts them, `bmm` needs them equal."""
    if len(first) < 3 or len(second) < 3:
        return None
    if broadcast:
        conflict = broadcast_conflict(first[:-2], second[:-2])
        return None if conflict is None else (conflict[1], conflict[2])
    return (first[0], second[0]) if differ(first[0], second[0]) else None


def rank_conflict(shapes: list[tuple]) -> int | None:
    """The index of the first tensor whose number of dims is not the first one's, for `cat` and
    `stack`, which need one rank (torch.cat lets an empty 1-D tensor, of size 0, join any)."""
    ranks = [len(shape) for shape in shapes if shape != ("0",)]
    if len(ranks) < 2:
        return None
    return next((index for index, shape in enumerate(shapes) if shape != ("0",) and len(shape) != ranks[0]), None)


def concat_conflict(shapes: list[tuple], dim: int | None) -> tuple[int, int, str, str] | None:
    """(tensor index, dim, size of the first, size of that tensor) of the first dim other than
    `dim` (every dim when `dim` is None: `stack`) where two tensors differ."""
    rank = len(shapes[0])
    if any(len(shape) != rank for shape in shapes):
        return None
    if dim is not None:
        dim = dim + rank if dim < 0 else dim
        if not 0 <= dim < rank:
            return None
    for index, shape in enumerate(shapes[1:], start=1):
        for position in range(rank):
            if position != dim and differ(shapes[0][position], shape[position]):
                return index, position, shapes[0][position], shape[position]
    return None


def _subscripts(term: str, rank: int) -> list[tuple[str, int]] | None:
    """(letter, dim) for each subscript of one einsum operand of `rank` dims; None when they
    cannot cover it (`...` stands for the dims between its letters)."""
    if "..." in term:
        before, after = term.split("...", 1)
        if len(before) + len(after) > rank or "." in after:
            return None
        return [*((letter, dim) for dim, letter in enumerate(before)),
                *((letter, rank - len(after) + dim) for dim, letter in enumerate(after))]
    return list(zip(term, range(rank))) if len(term) == rank else None


def einsum_conflict(equation: str, shapes: list) -> tuple[str, tuple[int, int], tuple[int, int]] | None:
    """(letter, (operand, dim), (operand, dim)) where an einsum equation binds one letter to two
    sizes that cannot be one: unequal literals, neither 1 across operands (1 broadcasts)."""
    terms = equation.replace(" ", "").split("->", 1)[0].split(",")
    if len(terms) != len(shapes):
        return None
    seen: dict[str, tuple[int, int]] = {}
    for operand, (term, shape) in enumerate(zip(terms, shapes)):
        if shape is None or not all(letter.isalpha() for letter in term.replace("...", "")):
            continue
        for letter, dim in _subscripts(term, len(shape)) or ():
            if letter not in seen:
                seen[letter] = (operand, dim)
                continue
            first, first_dim = seen[letter]
            a, b = shapes[first][first_dim], shape[dim]
            if differ(a, b) if first == operand else cannot_broadcast(a, b):
                return letter, (first, first_dim), (operand, dim)
    return None
