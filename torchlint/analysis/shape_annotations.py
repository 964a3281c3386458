"""Tensor shapes written in annotations, parsed from the annotation text (no dependency).

Two spellings are read:
- `Annotated[torch.Tensor, Shape("B", 3, 32, 32)]`: a call named `Shape` whose arguments are
  size names (strings) or integer literals;
- jaxtyping's `Float[Tensor, "b c h w"]` (any dtype class of `jaxtyping`): one size per word,
  digits for a fixed size. A variadic word (`*batch`, `...`) leaves the rank unknown, so the
  annotation says nothing; an anonymous (`_`), broadcastable (`#b`) or computed (`h+1`) word is
  one unknown size.
An annotation with a size of 0 gives no shape: no one documents an empty tensor.

Sizes are returned as code-like text, as the tensor-facts model keeps them (`"B"`, `"3"`).
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import dotted_name, integer

_NAME = re.compile(r"^[A-Za-z][A-Za-z_0-9]*$")


def annotated_shape(ctx, annotation: cst.BaseExpression | None) -> tuple[str | None, ...] | None:
    """The sizes an annotation gives a tensor; None when it gives no shape, or gives a size of 0:
    no one documents an empty tensor, and `Float[Tensor, "0"]` on a loss means a scalar (`""`)."""
    if not isinstance(annotation, cst.Subscript):
        return None
    qualified = ctx.qualified_name(annotation.value) or ""
    elements = [element.slice.value for element in annotation.slice if isinstance(element.slice, cst.Index)]
    sizes = None
    if qualified.rsplit(".", 1)[-1] == "Annotated":
        sizes = next((sizes for sizes in map(_shape_call, elements[1:]) if sizes is not None), None)
    elif qualified.startswith("jaxtyping.") and len(elements) == 2 and isinstance(elements[1], cst.SimpleString):
        sizes = _jaxtyping_sizes(elements[1].evaluated_value)
    return None if sizes is None or "0" in sizes else sizes


def _shape_call(expr: cst.BaseExpression) -> tuple[str | None, ...] | None:
    if not isinstance(expr, cst.Call) or (dotted_name(expr.func) or "").rsplit(".", 1)[-1] != "Shape":
        return None
    sizes = []
    for arg in expr.args:
        value = arg.value
        if arg.keyword is not None or arg.star:
            return None
        if isinstance(value, cst.Integer) and (size := integer(value.value)) is not None:
            sizes.append(str(size))
        elif isinstance(value, cst.SimpleString) and _NAME.match(value.evaluated_value):
            sizes.append(value.evaluated_value)
        else:
            sizes.append(None)
    return tuple(sizes)


def _jaxtyping_sizes(text: str) -> tuple[str | None, ...] | None:
    sizes = []
    for word in text.split():
        if word.startswith("*") or word == "...":
            return None
        if word.isdigit() and (size := integer(word)) is not None:
            sizes.append(str(size))
        elif _NAME.match(word) and word != "_":
            sizes.append(word)
        else:
            sizes.append(None)
    return tuple(sizes)
