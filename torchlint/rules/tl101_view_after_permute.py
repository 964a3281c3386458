from __future__ import annotations

import libcst as cst

from torchlint.analysis.layouts import Layouts, shape_args, view_merge_breaks
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule


class ViewAfterPermute(Rule):
    """
    ## What it does
    Flags `.view(...)` on the result of `.permute`, `.transpose`, `.t()`, `.T`, `.mT`,
    `.swapaxes`, `.movedim` or `.expand` (in a chain or through local variables) when the view
    merges dimensions that are no longer adjacent and in order in memory.

    Views that only split dimensions or keep the rank, merges of dimensions that stayed adjacent
    and in order (`x.permute(0, 2, 3, 1).view(b, -1, c)`), size-1 dimensions, and views after a
    `.contiguous()` or `.reshape()` are not reported; neither is a view whose merged dimensions
    cannot be told from the code.

    ## Why is this bad?
    `view` never copies: it needs the merged dimensions to be laid out contiguously. After a
    permute they are not, and the view raises `RuntimeError: view size is not compatible with
    input tensor's size and stride`; on some shapes (a size-1 batch in tests) it happens to work,
    so the crash shows up later in training or in production.

    ## Example
    ```python
    out = (attn @ v).transpose(1, 2).view(b, -1, h * d)
    ```

    ## Use instead
    ```python
    out = (attn @ v).transpose(1, 2).reshape(b, -1, h * d)
    # or
    out = (attn @ v).transpose(1, 2).contiguous().view(b, -1, h * d)
    ```

    ## Fix safety
    The fix renames `.view(` to `.reshape(`, which returns the same values (copying only when a
    view is impossible). It is safe: the code it replaces could only raise.

    Bug left in place: no, the reshape merges the same dims the view was asked to. Computation
    changed: no; where the view would have raised, `reshape` copies, so writes through the result
    no longer reach the original tensor, which no working code relied on (the original line
    raised).
    """

    code = "TL101"
    name = "view-after-permute"
    summary = "`.view()` merges dimensions that a permute/transpose made non-adjacent: use `.reshape()`"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._layouts = Layouts(ctx)

    def leave_Assign(self, node: cst.Assign) -> None:
        self._layouts.leave_Assign(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._layouts.visit_FunctionDef(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._layouts.leave_FunctionDef(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("view", "reshape"):
            return
        layout = self._layouts.layout(func.value)
        if func.attr.value == "reshape":
            self._layouts.note_shape_call(node, layout)
            return
        args = shape_args(node)
        if args is None or (len(args) == 1 and self.ctx.kinds.is_dtype(args[0])):
            return
        breaks = layout is not None and view_merge_breaks(self.ctx, layout, args, self._layouts.single_dims)
        self._layouts.note_shape_call(node, layout)
        if not breaks:
            return
        self.report(
            node,
            "`.view()` merges dimensions that a permute/transpose made non-contiguous (RuntimeError); "
            "use `.reshape(...)` or `.contiguous().view(...)`",
            fix=FixSpec("Replace `.view(` with `.reshape(`", ((func.attr, "reshape"),), Applicability.SAFE),
        )
