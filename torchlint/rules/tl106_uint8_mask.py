from __future__ import annotations

import libcst as cst

from torchlint.analysis.literals import needs_parentheses
from torchlint.analysis.names import argument, method_name, method_receiver, positional_args, single_index
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec, RelatedNode
from torchlint.rule import Rule

# Spellings that make a uint8 tensor, looked up as plain substrings (many times faster than a
# regex alternation over the source).
_UINT8_WORDS = ("uint8", ".byte(", "ByteTensor")
# Mask arguments that raise for a uint8 mask on current torch, by method and function name.
_RAISING_METHODS = frozenset({"masked_fill", "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_"})
_RAISING_FUNCTIONS = frozenset({"torch.masked_select", "torch.masked_fill", "torch.masked_scatter"})


class Uint8Mask(Rule):
    """
    ## What it does
    Flags a mask of dtype `uint8` used as a mask: to index a tensor (`x[mask]`), in
    `masked_fill` / `masked_select` / `masked_scatter` (method or function), or as the condition of
    `torch.where(mask, a, b)`. The dtype comes from the tensor facts: `torch.ByteTensor(...)`,
    `dtype=torch.uint8`, `.byte()`, `.to(torch.uint8)`, also through local names and what
    helpers of this file return. The finding names the call that made the mask uint8 as a
    related place: that is the line to change. A Python list, tuple or dict indexed with an
    element of a uint8 tensor (`PRIMITIVES[arch[1]]`) is not reported: it takes the number the
    element holds.

    ## Why is this bad?
    Masks were uint8 before torch 1.2; they are bool now. `masked_fill`, `masked_select` and
    `masked_scatter` raise for a uint8 mask (`masked_fill_ only supports boolean masks`).
    Indexing and `torch.where` still accept one but warn on every call that it is deprecated
    and will be removed. And a uint8 tensor is ambiguous: `x[idx]` with integer indices stored
    as uint8 selects by mask, not by index.

    ## Example
    ```python
    mask = (lengths > 0).byte()
    scores = scores.masked_fill(mask, float("-inf"))
    kept = x[mask]
    ```

    ## Use instead
    ```python
    mask = lengths > 0          # already bool
    scores = scores.masked_fill(mask, float("-inf"))
    kept = x[mask]
    ```

    ## Fix safety
    The fix writes `mask.bool()` where the mask is used: safe, as uint8 masks select where they
    are nonzero, exactly what the bool mask selects. For `masked_fill` and its kin, the code
    raised before and now runs. Better still is to build the mask as bool where it is made.

    Bug left in place: no. Computation changed: no for indexing and `where`; the masked ops
    raised before.
    """

    code = "TL106"
    name = "uint8-mask"
    summary = "A uint8 mask: masked_fill/masked_select raise, indexing and where warn; use a bool mask"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # A uint8 tensor is made by one of these spellings: a file without any has no uint8 mask.
        self._may_hold_uint8 = any(word in ctx.source for word in _UINT8_WORDS)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        index = single_index(node) if self._may_hold_uint8 else None
        if index is None or isinstance(self.ctx.kinds.resolve(node.value), (cst.List, cst.Tuple, cst.Dict)):
            return  # `PRIMITIVES[x[1]]`: a Python list takes a tensor index as the number it holds
        self._check_mask(index, "indexing with a uint8 mask is deprecated and warns on every call")

    def visit_Call(self, node: cst.Call) -> None:
        if not self._may_hold_uint8:
            return
        callee = self.ctx.callee(node)
        if callee is None and method_name(node) in _RAISING_METHODS and method_receiver(node) is not None:
            mask = argument(node, 0, "mask")
        elif callee in _RAISING_FUNCTIONS:
            mask = argument(node, 1, "mask")
        elif callee == "torch.where" and len(positional_args(node)) == 3:
            self._check_mask(positional_args(node)[0].value, "`torch.where` with a uint8 condition is deprecated and warns")
            return
        else:
            return
        name = method_name(node) if callee is None else callee.rsplit(".", 1)[-1]
        self._check_mask(mask, f"`{name}` raises for a uint8 mask (it only supports bool masks)", Severity.ERROR)

    def _check_mask(self, mask: cst.BaseExpression | None, problem: str, severity: Severity | None = None) -> None:
        facts = self.ctx.tensors.facts(mask) if mask is not None else None
        if getattr(facts, "dtype", None) != "uint8":
            return
        written = self.ctx.code_for(mask)
        made = facts.typed_by
        self.report(
            mask, f"`{written}` is a uint8 mask: {problem}; make it bool (`{written}.bool()`, or build it as bool)",
            fix=FixSpec("Use `.bool()`", ((mask, f"({written}).bool()" if needs_parentheses(mask) else f"{written}.bool()"),)),
            severity=severity,
            related=(RelatedNode(made, "made as uint8 here"),) if made is not None and made is not mask else (),
        )

