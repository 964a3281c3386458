from __future__ import annotations

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.names import argument, keyword_arg
from torchlint.analysis.torch_api import LOAD_FUNCTIONS
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# From this version on, a missing `weights_only` means `weights_only=True`.
_SAFE_DEFAULT_SINCE = (2, 6)


class UnsafeTorchLoad(Rule):
    """
    ## What it does
    Flags `torch.load(..., weights_only=False)`, and `torch.load(...)` without `weights_only` unless
    the configured `target-torch-version` is 2.6 or newer (from 2.6 on, the default is
    `weights_only=True`; without a configured version the missing argument is reported, as
    TorchFix's TOR102 does). A variable passed as `weights_only`, calls with `**kwargs` (which may carry it;
    `*args` cannot, `weights_only` is keyword-only),
    version-gated fallbacks and `try`/`except` fallbacks are not flagged.

    ## Why is this bad?
    With `weights_only=False` (the default before torch 2.6), `torch.load` unpickles arbitrary
    Python objects: a checkpoint downloaded from the internet can run any code on the machine
    that loads it. `weights_only=True` restricts loading to tensors, primitive types and
    allow-listed classes.

    ## Example
    ```python
    state = torch.load("model.pt", map_location="cpu")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu", weights_only=True)
    ```
    For files you trust that hold other objects, allow-list their classes with
    `torch.serialization.add_safe_globals([...])`, or pass `weights_only=False` and suppress this
    finding with a `# noqa: TL502` comment that says why the file is trusted.

    ## Fix safety
    The fix adds `weights_only=True` and is unsafe: loading a file that holds objects other than
    tensors and primitive containers will then raise. It is not offered when a `pickle_module` is
    passed (that requires `weights_only=False`) nor for an explicit `weights_only=False`.

    Bug left in place: no. Computation changed: only for checkpoints holding arbitrary Python
    objects, which then fail to load (add their classes with
    `torch.serialization.add_safe_globals`).
    """

    code = "TL502"
    name = "unsafe-torch-load"
    summary = "torch.load without weights_only=True unpickles arbitrary code"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.callee(node) not in LOAD_FUNCTIONS or any(arg.star == "**" for arg in node.args):
            return
        weights_only = keyword_arg(node, "weights_only")
        if weights_only is not None:
            value = weights_only.value
            if not (isinstance(value, cst.Name) and value.value == "False"):
                return  # True, or a variable the caller chose; `None` is handled below
            if self.ctx.guards.in_compat_code(node, fallback_only=True):
                return
            self.report(
                node,
                "`torch.load(..., weights_only=False)` can run arbitrary code from the file; load only "
                "trusted files, or use `weights_only=True` with `torch.serialization.add_safe_globals`",
            )
            return
        target = self.ctx.settings.target_torch_version
        if target is not None and tuple(target[:2]) >= _SAFE_DEFAULT_SINCE:
            return
        if self.ctx.guards.in_compat_code(node, fallback_only=True):
            return
        fix = None
        if argument(node, 2, "pickle_module") is None:
            fixed = with_arguments(node, last=[keyword("weights_only", "True")])
            fix = FixSpec("Add `weights_only=True`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
        self.report(
            node,
            "`torch.load` without `weights_only` unpickles arbitrary code before torch 2.6; pass "
            "`weights_only=True`",
            fix=fix,
        )
