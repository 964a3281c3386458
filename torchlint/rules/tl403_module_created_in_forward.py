from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import first_parameter, in_module_method, self_attribute
from torchlint.analysis.names import dotted_name, is_constant_none, suite_statements
from torchlint.analysis.values import string_value
from torchlint.analysis.nn_layers import parameterized_layer
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class ModuleCreatedInForward(Rule):
    """
    ## What it does
    Flags a `torch.nn` layer with parameters (`nn.Linear`, `nn.Conv2d`, `nn.LayerNorm`,
    `nn.Embedding`, ...) constructed inside the `forward` method of an `nn.Module`.
    Parameter-free modules (`nn.ReLU`, `nn.Dropout`, `nn.Identity`, pooling, losses) are fine,
    and so is a layer built on the first call and kept on `self` (`if self.final is None:
    self.final = nn.Linear(...)`, or under `if not hasattr(self, "final"):`): it is built once,
    as `nn.LazyLinear` is, and trained like it when the optimizer is built after a first forward.

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
        if not in_module_method(self.ctx) or self.ctx.guards.in_version_gate(node) or self._built_once(function):
            return
        written = self.ctx.code_for(node.func)
        self.report(
            node,
            f"`{written}(...)` built in `forward` gets new random weights on every call and is never trained; "
            "create it in `__init__` and store it on `self`",
        )

    def _built_once(self, function: cst.FunctionDef) -> bool:
        """Under `if self.final is None:` (or `if not hasattr(self, "final"):`) whose block sets
        `self.final`: a layer built on the first call and kept, as `nn.LazyLinear` does."""
        owner = first_parameter(function)
        for ancestor in self.ctx.ancestors:
            if isinstance(ancestor, cst.If):
                name = _unset_attribute(ancestor.test, owner)
                if name is not None and _sets_attribute(ancestor.body, owner, name):
                    return True
        return False


def _unset_attribute(test: cst.BaseExpression, owner: str | None) -> str | None:
    """`X` of `self.X is None` or `not hasattr(self, "X")`, `self` being `owner`."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.Is) and is_constant_none(target.comparator):
            return self_attribute(test.left, owner) if owner else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Call):
        call = test.expression
        if dotted_name(call.func) == "hasattr" and len(call.args) == 2 and isinstance(call.args[0].value, cst.Name) \
                and call.args[0].value.value == owner:
            return string_value(call.args[1].value)
    return None


def _sets_attribute(block: cst.BaseSuite, owner: str | None, name: str) -> bool:
    return any(
        isinstance(small, cst.Assign) and any(self_attribute(target.target, owner) == name for target in small.targets)
        for statement in suite_statements(block) if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    )
