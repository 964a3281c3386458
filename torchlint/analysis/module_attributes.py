"""`self.<name>` assignments inside the methods of a class, seen during the walk.

Rules that judge an attribute assignment by what the rest of the class does with the same name
(registered later with `register_buffer`, wrapped in `nn.ModuleList`, re-assigned an
`nn.Parameter`) record candidates here and decide when the walk leaves the class.
"""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name

_REGISTRATION_METHODS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})


def self_attribute(target: cst.BaseExpression, self_name: str = "self") -> str | None:
    """`x` for the target `self.x`."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == self_name:
        return target.attr.value
    return None


def in_module_method(ctx) -> bool:
    """The current node is in a method (directly in the class body) of an `nn.Module` class."""
    classdef = ctx.enclosing_class()
    return classdef is not None and ctx.module_classes.is_module(classdef)


def first_parameter(function: cst.FunctionDef | None) -> str | None:
    """The name a method calls its instance (`self`), positional-only or not."""
    if function is None:
        return None
    params = [*function.params.posonly_params, *function.params.params]
    return params[0].name.value if params else None


def string_value(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value if isinstance(expr.evaluated_value, str) else None
    return None


def registration_of(call: cst.Call) -> tuple[str, str | None] | None:
    """For `self.register_buffer("x", ...)` / `setattr(self, "x", ...)`: (method, "x" or None)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _REGISTRATION_METHODS:
        name = string_value(call.args[0].value) if call.args else None
        return func.attr.value, name
    if dotted_name(func) == "setattr" and len(call.args) >= 2:
        return "setattr", string_value(call.args[1].value)
    return None


class ClassFrame:
    """What one class's methods do with `self.<name>`, gathered while the walk is inside it."""

    def __init__(self, classdef: cst.ClassDef, is_module: bool) -> None:
        self.classdef = classdef
        self.is_module = is_module
        # (node to report, attribute name, message), decided when the class is left.
        self.candidates: list[tuple[cst.CSTNode, str, str]] = []
        # Attribute name -> the torch factory call its unregistered tensor came from.
        self.tensor_factories: dict[str, cst.Call] = {}
        # Names registered by name: `register_buffer("x", ...)`, `self.x = nn.Parameter(...)`.
        self.registered: set[str] = set()
        # `add_module(f"layer{i}", ...)`, `setattr(self, name, ...)`: any attribute may be registered.
        self.dynamic_registration = False

    def register_call(self, call: cst.Call) -> None:
        found = registration_of(call)
        if found is None:
            return
        _, name = found
        if name is None:
            self.dynamic_registration = True
        else:
            self.registered.add(name)

    def unregistered(self) -> list[tuple[cst.CSTNode, str, str]]:
        if self.dynamic_registration:
            return []
        return [candidate for candidate in self.candidates if candidate[1] not in self.registered]


class ClassFrames:
    """A stack of `ClassFrame`s that follows the walk (a rule calls `enter`/`leave`)."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._stack: list[ClassFrame] = []

    def enter(self, classdef: cst.ClassDef) -> None:
        self._stack.append(ClassFrame(classdef, self._ctx.module_classes.is_module(classdef)))

    def leave(self) -> ClassFrame:
        return self._stack.pop()

    def method_frame(self) -> ClassFrame | None:
        """The frame of the Module class whose method directly holds the current node."""
        if not self._stack:
            return None
        frame = self._stack[-1]
        if not frame.is_module or self._ctx.enclosing_class() is not frame.classdef:
            return None
        return frame

    def self_target(self, target: cst.BaseExpression) -> str | None:
        """`x` when `target` is `self.x` (named after the method's first parameter)."""
        return self_attribute(target, first_parameter(self._ctx.enclosing_function()) or "self")
