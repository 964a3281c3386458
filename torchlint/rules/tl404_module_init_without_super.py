from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import first_parameter
from torchlint.analysis.modules import is_torch_module_class
from torchlint.analysis.names import dotted_name, is_name, method_name, method_receiver
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# Module methods that register something and raise before `Module.__init__()` has run.
_REGISTERING_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


class ModuleInitWithoutSuper(Rule):
    """
    ## What it does
    Flags the `__init__` of an `nn.Module` subclass that never calls `super().__init__()` (or
    another `__init__` of its class hierarchy, such as `nn.Module.__init__(self)`), and one that
    assigns a submodule or a parameter, or registers a buffer, before that call.

    ## Why is this bad?
    `nn.Module.__init__` creates the dictionaries that hold parameters, buffers, submodules and
    hooks. Without it, the first submodule assignment raises `AttributeError: cannot assign
    module before Module.__init__() call` (`cannot assign parameters ...` for an
    `nn.Parameter`, `cannot assign buffer ...` for `register_buffer`); a module that only holds
    plain attributes constructs, then fails at its first call, `.to()` or `.parameters()` with
    `'Net' object has no attribute '_modules'`.

    Plain values assigned before the call (`self.hidden = hidden`) work and are not reported.

    ## Example
    ```python
    class Classifier(nn.Module):
        def __init__(self, hidden):
            self.fc = nn.Linear(hidden, 10)
            super().__init__()
    ```

    ## Use instead
    ```python
    class Classifier(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.fc = nn.Linear(hidden, 10)
    ```
    """

    code = "TL404"
    name = "module-init-without-super"
    summary = "nn.Module __init__ assigns submodules or parameters before (or without) super().__init__()"
    severity = Severity.ERROR

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value != "__init__":
            return
        classdef = self.ctx.enclosing(cst.ClassDef)
        if not isinstance(classdef, cst.ClassDef) or node not in classdef.body.body:
            return
        if not self._certainly_module(classdef, depth=0):
            return
        instance = first_parameter(node)
        if instance is None:
            return
        for expression in nodes_in_order(node.body):
            if _is_init_call(expression, instance) or self._delegates(expression, instance, classdef):
                return
            registered = self._registration(expression, instance)
            if registered is not None:
                self.report(
                    expression,
                    f"{registered} before `super().__init__()` raises `AttributeError`; "
                    "call `super().__init__()` first",
                )
                return
        if not _is_stub(node):
            self.report(
                node.name,
                f"`{classdef.name.value}.__init__` never calls `super().__init__()`: the module has no "
                "parameter, buffer or submodule registry and fails at its first use; call it first",
            )

    def _certainly_module(self, classdef: cst.ClassDef, depth: int) -> bool:
        """A base is a `torch.nn` module class, or a class of this file that certainly is one. (A
        class with unknown bases that defines `forward` may be a Module for other rules, but its
        unknown base may just as well be a plain class whose `__init__` needs no call.)"""
        for base in classdef.bases:
            qualified = self.ctx.qualified_name(base.value)
            if qualified is not None and is_torch_module_class(qualified):
                return True
            local = self.ctx.loops.index.classes.get(dotted_name(base.value) or "")
            if local is not None and local is not classdef and depth < 4 and self._certainly_module(local, depth + 1):
                return True
        return False

    def _registration(self, expression: cst.CSTNode, instance: str) -> str | None:
        """What `expression` registers on the instance: 'assigning submodule `self.fc`'..."""
        if isinstance(expression, (cst.Assign, cst.AnnAssign)):
            targets = [target.target for target in expression.targets] if isinstance(expression, cst.Assign) \
                else [expression.target]
            value = expression.value
            for target in targets:
                if isinstance(target, cst.Attribute) and is_name(target.value, instance) and value is not None:
                    what = self._registered_kind(value)
                    if what is not None:
                        return f"assigning {what} `{instance}.{target.attr.value}`"
            return None
        if isinstance(expression, cst.Call) and method_name(expression) in _REGISTERING_METHODS \
                and is_name(method_receiver(expression), instance):
            return f"`{instance}.{method_name(expression)}(...)`"
        return None

    def _registered_kind(self, value: cst.BaseExpression) -> str | None:
        """'submodule' for `nn.Linear(...)` / a Module class of this file, 'parameter' for `nn.Parameter(...)`."""
        if not isinstance(value, cst.Call):
            return None
        qualified = self.ctx.callee(value)
        if qualified in _PARAMETER_CLASSES:
            return "parameter"
        if qualified is not None:
            module, _, last = qualified.rpartition(".")
            return "submodule" if module in ("torch.nn", "torch.nn.modules") and last[:1].isupper() else None
        written = dotted_name(value.func)
        return "submodule" if written is not None and self.ctx.module_classes.is_module_name(written) else None

    def _delegates(self, expression: cst.CSTNode, instance: str, classdef: cst.ClassDef) -> bool:
        """`self.setup(...)` where `setup` is a method of this class that calls an `__init__`."""
        if not isinstance(expression, cst.Call) or not is_name(method_receiver(expression), instance):
            return False
        called = method_name(expression)
        for statement in classdef.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == called and called != "__init__":
                helper_instance = first_parameter(statement)
                return helper_instance is not None and any(
                    _is_init_call(inner, helper_instance) for inner in nodes_in_order(statement.body)
                )
        return False


def _is_init_call(expression: cst.CSTNode, instance: str) -> bool:
    """`super().__init__(...)`, `super(Net, self).__init__(...)`, `nn.Module.__init__(self, ...)`;
    also `nn.Module.__init__()` without `self`, the spelling of transformers' modular templates."""
    if not isinstance(expression, cst.Call) or method_name(expression) != "__init__":
        return False
    receiver = method_receiver(expression)
    if isinstance(receiver, cst.Call) and is_name(receiver.func, "super"):
        return True
    if isinstance(receiver, cst.Attribute) and dotted_name(receiver) is not None:
        return True  # `nn.Module.__init__(...)`: a class's __init__, whatever the arguments
    return bool(expression.args) and is_name(expression.args[0].value, instance)


def _is_stub(function: cst.FunctionDef) -> bool:
    """A body of only a docstring, `...` or a `raise`: an abstract placeholder, never run as is."""
    statements = function.body.body if isinstance(function.body, cst.IndentedBlock) else [function.body]
    for statement in statements:
        small = statement.body if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None
        if small is None:
            return False
        for item in small:
            if isinstance(item, cst.Raise):
                continue
            if isinstance(item, cst.Expr) and isinstance(item.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
                continue
            return False
    return True
