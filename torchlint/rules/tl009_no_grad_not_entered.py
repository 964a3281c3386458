from __future__ import annotations

import libcst as cst

from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_PREFIXES = ("torch.", "torch.autograd.", "torch.autograd.grad_mode.")
_CONTEXT_MANAGERS = {
    f"{prefix}{name}": name for prefix in _PREFIXES for name in ("no_grad", "inference_mode", "enable_grad")
}
_METHODS = frozenset({"eval", "train", "zero_grad"})


class NoGradNotEntered(Rule):
    """
    ## What it does
    Flags `torch.no_grad()`, `torch.inference_mode()` and `torch.enable_grad()` written as a
    statement of their own, and `model.eval`, `model.train`, `optimizer.zero_grad` named as a
    statement without being called.

    ## Why is this bad?
    The grad-mode objects only act when entered by `with` (or used as decorators): as a bare
    statement they are created and thrown away, and the code below still records the graph.
    `model.eval` without parentheses only looks up the method: the model stays in training mode
    (dropout active, batch norm statistics updated) and the gradients are not cleared.
    `torch.set_grad_enabled(False)` as a statement does work and is not flagged.

    ## Example
    ```python
    model.eval
    torch.no_grad()
    preds = model(x)
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.no_grad():
        preds = model(x)
    ```
    """

    code = "TL009"
    name = "no-grad-not-entered"
    summary = "A grad-mode context manager or `model.eval` used as a statement has no effect"
    severity = Severity.ERROR

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        if isinstance(value, cst.Call):
            if isinstance(value.func, (cst.Attribute, cst.Name)):
                name = _CONTEXT_MANAGERS.get(self.ctx.callee(value) or "")
                if name is not None and not self.ctx.guards.in_version_gate(node):
                    written = self.ctx.code_for(value.func)
                    self.report(
                        value,
                        f"`{written}()` as a statement has no effect; use `with {written}():` around the code",
                    )
        elif isinstance(value, cst.Attribute) and value.attr.value in _METHODS and not self.ctx.guards.in_version_gate(node):
            written = self.ctx.code_for(value)
            self.report(value, f"`{written}` is not called, so it does nothing; write `{written}()`")
