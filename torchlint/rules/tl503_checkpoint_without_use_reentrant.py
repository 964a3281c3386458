from __future__ import annotations

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.names import keyword_arg, positional_args
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

_CHECKPOINT_FUNCTIONS = frozenset(
    {"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"}
)

# `checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs)`
_SEQUENTIAL_USE_REENTRANT_POSITION = 3


class CheckpointWithoutUseReentrant(Rule):
    """
    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(fn, ...)` and `checkpoint_sequential(...)` called
    without `use_reentrant=`. Calls with `**kwargs` (which may carry it), `checkpoint_sequential`
    calls with `*args` (its `use_reentrant` is positional), version-gated fallbacks
    and `try`/`except` fallbacks are not flagged.

    ## Why is this bad?
    Without the argument, torch uses the legacy reentrant implementation and warns on every
    call; the default is announced to change to `use_reentrant=False`. The reentrant variant
    gives the region's parameters no gradient when no input of the region requires grad (a
    frozen embedding before checkpointed blocks: only a warning says so), and it does not support
    `torch.autograd.grad`, keyword arguments or tensors inside nested structures.

    ## Example
    ```python
    hidden = checkpoint(self.block, hidden)
    ```

    ## Use instead
    ```python
    hidden = checkpoint(self.block, hidden, use_reentrant=False)
    ```

    ## Fix safety
    The fix adds `use_reentrant=False` and is unsafe: it changes which implementation runs. The
    non-reentrant one is recommended and gives the same gradients for ordinary code, but code that
    depends on how the reentrant one behaves needs checking. Pass `use_reentrant=True` to keep
    the old behaviour without the warning.

    Bug left in place: no. Computation changed: gradients are the same for ordinary code; code that
    relies on reentrant-only behaviour (inputs without grad, `torch.autograd.grad` inside) must be
    checked.
    """

    code = "TL503"
    name = "checkpoint-without-use-reentrant"
    summary = "Activation checkpoint without explicit use_reentrant"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or keyword_arg(node, "use_reentrant") is not None:
            return
        qualified = self.ctx.callee(node)
        if qualified not in _CHECKPOINT_FUNCTIONS or any(arg.star == "**" for arg in node.args):
            return
        # `checkpoint(fn, *args, use_reentrant=...)` takes it by keyword only: `*args` cannot carry it.
        sequential = qualified.endswith("_sequential")
        if sequential and any(arg.star for arg in node.args):
            return
        if sequential and len(positional_args(node)) > _SEQUENTIAL_USE_REENTRANT_POSITION:
            return
        if self.ctx.guards.in_compat_code(node, fallback_only=True):
            return
        fixed = with_arguments(node, last=[keyword("use_reentrant", "False")])
        name = qualified.rsplit(".", 1)[-1]
        self.report(
            node,
            f"`{name}` without `use_reentrant` uses the legacy reentrant implementation and warns; "
            "pass `use_reentrant=False` (or `True` to keep the old behaviour)",
            fix=FixSpec("Add `use_reentrant=False`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE),
        )
