from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import has_star_args, keyword_arg, positional_args
from torchlint.analysis.tensor_facts.domain import TensorFacts
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import every_node

# Qualified name -> how many positional arguments come before `dim`.
_FUNCTIONS = {
    f"torch.nn.functional.{name}": 1 for name in ("softmax", "log_softmax", "softmin")
}
_MODULES = {
    f"{module}.{name}": 0
    for module in ("torch.nn", "torch.nn.modules.activation")
    for name in ("Softmax", "LogSoftmax", "Softmin")
}
_DIM_POSITION = {**_FUNCTIONS, **_MODULES}
# What `dim` is called elsewhere (NumPy's `axis`, a plural): these functions and modules take
# none of them, so the call raises TypeError before any dimension is guessed.
_DIM_SPELLINGS = frozenset({"dims", "axis", "axes", "dimension"})


class SoftmaxWithoutDim(Rule):
    """
    ## What it does
    Flags `F.softmax`, `F.log_softmax`, `F.softmin` called without `dim`, and the modules
    `nn.Softmax()`, `nn.LogSoftmax()`, `nn.Softmin()` built without `dim`.

    ## Why is this bad?
    Without `dim`, PyTorch guesses the dimension from the input's rank: dim 0 for 0-D, 1-D and
    3-D inputs, dim 1 otherwise. For a 3-D batch (batch, sequence, classes) it normalises across
    the *batch*, silently producing wrong probabilities. PyTorch only emits a deprecation warning.
    (`torch.softmax(x)` and `x.softmax()` have no default and raise, so they are not flagged.)

    A call that spells the dimension another way (`F.softmax(x, dims=-1)`, NumPy's `axis=`,
    `nn.Softmax(axis=1)`) raises TypeError: these take no such parameter. It is reported with a
    safe fix that renames the keyword to `dim`. (`torch.softmax` and `Tensor.softmax` accept
    `axis` as NumPy does, and are not flagged.)

    ## Example
    ```python
    probs = F.softmax(logits)
    self.act = nn.Softmax()
    ```

    ## Use instead
    ```python
    probs = F.softmax(logits, dim=-1)
    self.act = nn.Softmax(dim=-1)
    ```

    ## Fix safety
    The fix adds `dim=-1` and is unsafe: it states a choice (the last dimension) that the author
    must check, and it changes the result for inputs where PyTorch's guess picked another dim.
    Where the input is known to be 1-D or 2-D, the guess is the last dim and the fix is safe. So
    is renaming a misspelled `dims=` or `axis=` to `dim=`: the call raised before, and now takes the
    dimension the author wrote.

    Bug left in place: possibly, when the intended dim was not the last one; that is why the fix is
    unsafe. Computation changed: yes for inputs where the implicit dim was not the last.

    ## Severity
    An error, except where the input of `F.softmax(x)` (or `log_softmax`, `softmin`) is known to
    be 1-D or 2-D (`x.flatten(start_dim=1)`, `x.view(n, -1)`, the output of `nn.Linear` on a
    batch of vectors, a tensor after `assert x.dim() == 2` or `assert len(x.shape) == 2`): there
    the guess is the last dimension, the result is right, and the call
    only warns. The finding is a note, and its fix, `dim=-1`, is safe: it computes the same. A
    module stored on an attribute that nothing else in the file names (`self.softmax =
    nn.Softmax()` in a model whose `forward` never uses it) never runs there: a note too, whose
    fix stays unsafe, for the code that may call it later.
    """

    code = "TL202"
    name = "softmax-without-dim"
    summary = "Softmax without `dim`: the dimension is guessed from the input's rank"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.callee(node)
        position = _DIM_POSITION.get(qualified or "")
        if position is None or has_star_args(node) or keyword_arg(node, "dim") is not None:
            return
        if len(positional_args(node)) > position:
            return
        written = self.ctx.code_for(node.func)
        misspelled = next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value in _DIM_SPELLINGS),
                          None)
        if misspelled is not None:
            keyword = misspelled.keyword.value
            self.report(
                node,
                f"`{written}(..., {keyword}=...)` raises TypeError: it has no `{keyword}` parameter, the dimension is "
                "`dim=`",
                fix=FixSpec(f"Rename `{keyword}=` to `dim=`", ((misspelled.keyword, "dim"),), Applicability.SAFE),
            )
            return
        unused = None if position else self._unused_attribute(node)
        if unused is not None:
            self.report(
                node,
                f"`{written}` without `dim` would guess the dimension from its input's rank; nothing in this file "
                f"uses `{unused}`, so it never runs here; pass `dim=` for code that may use it",
                fix=self._add_dim(node, Applicability.UNSAFE), severity=Severity.NOTE,
            )
            return
        rank = self._input_rank(node) if position else None
        if rank in (1, 2):
            self.report(
                node,
                f"`{written}` without `dim` takes the last dimension of this {rank}-D input, and warns that the "
                "guess is deprecated; pass `dim=-1`",
                fix=self._add_dim(node, Applicability.SAFE), severity=Severity.NOTE,
            )
            return
        self.report(
            node,
            f"`{written}` without `dim` guesses the dimension from the input's rank; pass `dim=` explicitly",
            fix=self._add_dim(node, Applicability.UNSAFE),
        )

    def _input_rank(self, node: cst.Call) -> int | None:
        """The rank of a function form's input where the tensor facts know it (`x.flatten(1)`)."""
        facts = self.ctx.tensors.facts(positional_args(node)[0].value)
        return facts.rank if isinstance(facts, TensorFacts) else None

    def _unused_attribute(self, node: cst.Call) -> str | None:
        """`self.softmax` of `self.softmax = nn.Softmax()` where nothing else in the file names the
        attribute (`self.softmax(x)`, `net.softmax`, `getattr(self, "softmax")`; a module's
        function, `F.softmax`, is another thing): the layer never runs here."""
        parent = self.ctx.parent
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or parent.value is not node:
            return None
        target = parent.targets[0].target
        if not isinstance(target, cst.Attribute):
            return None
        name = target.attr.value
        if re.search(rf"[\"']{re.escape(name)}[\"']", self.ctx.source):
            return None  # named in a string: `getattr(self, "softmax")`, a config key
        used = any(
            isinstance(other, cst.Attribute) and other is not target and other.attr.value == name
            and self.ctx.qualified_name(other.value) is None
            for other in every_node(self.ctx.module))
        return None if used else self.ctx.code_for(target)

    def _add_dim(self, node: cst.Call, applicability: Applicability) -> FixSpec:
        dim = cst.Arg(keyword=cst.Name("dim"), value=cst.UnaryOperation(cst.Minus(), cst.Integer("1")),
                      equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        arguments = [*node.args]
        if arguments and arguments[-1].comma == cst.MaybeSentinel.DEFAULT:
            arguments[-1] = arguments[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        fixed = node.with_changes(args=[*arguments, dim])
        return FixSpec("Add `dim=-1`", ((node, self.ctx.code_for(fixed)),), applicability)
