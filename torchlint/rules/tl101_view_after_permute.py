from __future__ import annotations

import libcst as cst

from torchlint.analysis.layouts import shape_args, view_merge_breaks
from torchlint.analysis.names import dotted_name
from torchlint.analysis.tensor_facts.domain import TensorFacts
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec, RelatedNode
from torchlint.rule import Rule


class ViewAfterPermute(Rule):
    """
    ## What it does
    Flags `.view(...)` on a tensor reordered by `permute`, `transpose`, `t()`, `.T`, `.mT`,
    `swapaxes`/`swapdims`, `movedim`/`moveaxis` or `expand`/`expand_as` (method or function
    form: `torch.permute(x, dims)`, `torch.transpose(x, 0, 1)`) when the view merges dimensions
    that are no longer adjacent and in order in memory, for every size greater than 1 of the
    merged dimensions.

    The tensor is followed through local variables, branches, loops and ops that keep the
    layout (softmax, dropout, arithmetic with numbers; slices such as `x[:k]`, which keep the
    strides; elementwise ops between tensors of one rank, laid out like their first operand that
    is not expanded, so `pred.t().eq(target.expand_as(...))[:k].view(-1)` in a top-k accuracy
    helper is found), and its rank is recovered from the code:
    `B, T, C = x.size()`, `x.view(B, T, H, D)`, matmul (`@`), reductions, `torch.cat`/`stack`,
    rank-keeping layers (`nn.Linear`, `nn.Dropout`...). So the merge-heads line
    `(att @ v).transpose(1, 2).view(B, T, C)` is found when `att` and `v` come from
    `view(B, T, H, D).transpose(1, 2)`, and `x.view(-1)` after any reordering of two or more
    dims merges them all (`x.t().view(-1)`, `x.T.view(6)`).

    Views that only split dimensions or keep the rank, merges of dimensions that stayed adjacent
    and in order (`x.permute(0, 2, 3, 1).view(b, -1, c)`), dimensions the code shows to have size
    1 (`unsqueeze`, `[None]`, a literal `1`, after `squeeze`), and views after a `.contiguous()`
    or `.reshape()` are not reported; neither is a view whose merged dimensions cannot be told
    from the code.

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

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "view":
            return
        args = shape_args(node)
        if args is None or (len(args) == 1 and self.ctx.kinds.is_dtype(args[0])):
            return
        facts = self.ctx.tensors.facts(func.value)
        if not isinstance(facts, TensorFacts) or facts.layout is None:
            return
        if not view_merge_breaks(self.ctx, facts.layout, args, self.ctx.tensors.single_dims()):
            return
        self.report(
            node,
            "`.view()` merges dimensions that a permute/transpose made non-contiguous (RuntimeError); "
            "use `.reshape(...)` or `.contiguous().view(...)`",
            fix=FixSpec("Replace `.view(` with `.reshape(`", ((func.attr, "reshape"),), Applicability.SAFE),
            related=_reordering(facts.layout.reordered_by, func.value),
        )


def _reordering(call: cst.CSTNode | None, receiver: cst.BaseExpression) -> tuple[RelatedNode, ...]:
    """Where the dimensions were reordered, when that is not written in the viewed expression
    itself (`x.transpose(1, 2).view(...)` needs no note)."""
    if not isinstance(call, cst.Call):
        return ()
    current = receiver
    while isinstance(current, (cst.Call, cst.Attribute, cst.Subscript)):
        if current is call:
            return ()
        current = current.func if isinstance(current, cst.Call) else current.value
    name = call.func.attr.value if isinstance(call.func, cst.Attribute) else dotted_name(call.func)
    return (RelatedNode(call, f"the dimensions are reordered here (`{name}`)"),)
