from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import in_module_method
from torchlint.analysis.nn_layers import parameterized_layer
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class ModuleCreatedInForward(Rule):
    """
    ## What it does
    Flags a `torch.nn` layer with parameters (`nn.Linear`, `nn.Conv2d`, `nn.LayerNorm`,
    `nn.Embedding`, ...) constructed inside the `forward` method of an `nn.Module`.
    Parameter-free modules (`nn.ReLU`, `nn.Dropout`, `nn.Identity`, pooling, losses) are fine.

    ## Why is this bad?
    The layer gets freshly initialised random weights on every call: its parameters are not in
    the optimizer (never trained), not in `state_dict()` (not saved), created on the CPU even when
    the model is on the GPU, and the output changes from call to call.

    ## Example
    ```python
    def forward(self, x):
        proj = nn.Linear(x.shape[-1], self.dim)
        return proj(x)
    ```

    ## Use instead
    ```python
    def __init__(self, in_dim, dim):
        super().__init__()
        self.proj = nn.Linear(in_dim, dim)

    def forward(self, x):
        return self.proj(x)
    ```
    """

    code = "TL403"
    name = "module-created-in-forward"
    summary = "A layer with parameters built in `forward` is re-initialised each call and never trained"
    severity = Severity.ERROR

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, (cst.Attribute, cst.Name)):
            return
        function = self.ctx.enclosing_function()
        if function is None or function.name.value != "forward":
            return
        layer = parameterized_layer(self.ctx, node)
        if layer is None:
            return
        if not in_module_method(self.ctx) or self.ctx.guards.in_version_gate(node):
            return
        written = self.ctx.code_for(node.func)
        self.report(
            node,
            f"`{written}(...)` built in `forward` gets new random weights on every call and is never trained; "
            "create it in `__init__` and store it on `self`",
        )
