from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import dotted_name, positional_args
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule

# The last word of a name that holds a module (`model`, `self.text_encoder`, `layer`).
_MODULE_WORD = re.compile(
    r"(?:^|_)(model|module|net|network|layer|block|encoder|decoder|backbone|head|classifier|stem|neck)$"
)
# The last word of a container of modules (`self.layers[i]`, `self.downsample_modules[0]`).
_MODULES_WORD = re.compile(r"(?:^|_)(models|modules|layers|blocks|heads|stages|encoders|decoders)$")


def _last_word(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


class ForwardCalledDirectly(Rule):
    """
    ## What it does
    Flags `m.forward(x)` on a module where `m(x)` was meant. Calls on `super()`, on a class
    (`Base.forward(self, x)`) and `self.forward(...)` are fine.

    ## Why is this bad?
    `nn.Module.__call__` runs the forward pre-hooks and hooks, backward hooks, and the machinery
    that libraries attach through them (pruning, quantization observers, FSDP, DeepSpeed,
    accelerate device placement, activation checkpointing wrappers). `m.forward(x)` skips all of
    it: results can silently differ from `m(x)`.

    ## Example
    ```python
    for layer in self.layers:
        x = layer.forward(x)
    ```

    ## Use instead
    ```python
    for layer in self.layers:
        x = layer(x)
    ```

    ## Fix safety
    The fix rewrites `m.forward(x)` to `m(x)` and is unsafe: the module's hooks start running,
    which is the point, but changes what the call does when hooks are registered.

    Bug left in place: no, the hooks run. Computation changed: only where forward or full hooks are
    registered (they now run, as they were meant to).
    """

    code = "TL005"
    name = "forward-called-directly"
    summary = "`m.forward(x)` skips the module's hooks; call `m(x)`"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Per class: the `self.<name>` attributes assigned a module constructor.
        self._module_attributes: dict[int, set[str]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        classdef = self.ctx.enclosing_class()
        if classdef is not None and self._constructs_module(node.value):
            self._module_attributes.setdefault(id(classdef), set()).add(target.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "forward":
            return
        receiver = func.value
        if self._is_self_super_or_class(receiver, node) or not self._is_module(receiver):
            return
        if self.ctx.guards.in_version_gate(node):
            return
        written = self.ctx.code_for(receiver)
        self.report(
            node,
            f"`{written}.forward(...)` skips the module's hooks; call `{written}(...)`",
            fix=FixSpec(f"Call `{written}(...)`", ((func, written),), Applicability.UNSAFE),
        )

    def _is_self_super_or_class(self, receiver: cst.BaseExpression, call: cst.Call) -> bool:
        if isinstance(receiver, cst.Call):
            return dotted_name(receiver.func) == "super"
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            return True
        last = _last_word(receiver)
        if last is not None and last[:1].isupper():
            return True  # `Base.forward(self, x)`, `nn.LayerNorm.forward(self, x)`
        first = positional_args(call)[:1]
        return bool(first) and isinstance(first[0].value, cst.Name) and first[0].value.value == "self"

    def _is_module(self, receiver: cst.BaseExpression) -> bool:
        resolved = self.ctx.values.resolve(receiver)
        if isinstance(resolved, cst.Call):
            return self._constructs_module(resolved)
        for expr in (receiver, resolved):
            if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                classdef = self.ctx.enclosing_class()
                if classdef is not None and expr.attr.value in self._module_attributes.get(id(classdef), ()):
                    return True
            last = _last_word(expr)
            if last is not None and _MODULE_WORD.search(last):
                return True
            if isinstance(expr, cst.Subscript):
                container = _last_word(expr.value)
                if container is not None and _MODULES_WORD.search(container):
                    return True
        return False

    def _constructs_module(self, call: cst.Call) -> bool:
        if nn_class_name(self.ctx.callee(call)) is not None:
            return True
        written = dotted_name(call.func)
        return written is not None and "." not in written and self.ctx.module_classes.is_module_name(written)
