"""Which expressions hold an `nn.Module` instance, asked via `holds_module(ctx, expr)`.

A value is a module when `ctx.kinds` knows it is one (`nn.Linear(...)`, `Net()` of a Module class
of this file, `self` in a Module method, their `.to(device)`), or when it was built by a call that
builds one: a `torch.nn` constructor, a Module class of this file, a model library's factory
(`torchvision.models.resnet18()`, `timm.create_model(...)`, `torch.hub.load(...)`), or a function
of this file that returns one of these (`def build_model(): return Net()`), also through the
fluent calls that return the module itself (`Net().to(device).eval()`). A `self.<name>`
attribute is a module when the class assigns it one. Failing all that, a name people only give
to modules (`model`, `self.backbone`, `netD`, `self.layers[i]`) is one.
"""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.modules import is_model_factory, named_like_module
from torchlint.analysis.names import dotted_name, nested_statement_lists, suite_statements
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.torch_api import SIGMOID_FUNCTIONS, SOFTMAX_FUNCTIONS, call_matches
from torchlint.analysis.values import MODULE_FLUENT_METHODS

# How many same-file builder functions are followed (`make_model` calling `build_backbone`).
_MAX_BUILDER_DEPTH = 3


# Inference runtimes and frameworks whose models are named like torch's but are no Modules.
_OTHER_RUNTIMES = (
    "cv2.", "onnxruntime.", "tensorrt.", "openvino.", "tensorflow.", "tflite_runtime.", "coremltools.",
    "paddle.", "jax.", "keras.",
)


def holds_module(ctx, expr: cst.BaseExpression, *, by_name: bool = True) -> bool:
    """`expr` holds a module instance; `by_name=False` asks for proof from how it was built."""
    if ctx.kinds.is_module(expr):
        return True
    resolved = ctx.values.resolve(expr)
    if isinstance(resolved, cst.Call) and builds_module(ctx, resolved):
        return True
    made = ctx.self_attributes.value_of(expr) if isinstance(expr, cst.Attribute) else None
    if isinstance(made, cst.Call) and builds_module(ctx, made):
        return True
    if any(isinstance(value, cst.Call) and (ctx.callee(value) or "").startswith(_OTHER_RUNTIMES)
           for value in (resolved, made)):
        return False  # `self.net = cv2.dnn.readNetFromONNX(path)`: a net, but no torch Module
    return by_name and (named_like_module(expr) or named_like_module(resolved))


def builds_module(ctx, call: cst.Call, depth: int = 0) -> bool:
    """The call returns a module: see the module docstring."""
    call = _without_fluent_calls(call)
    if not isinstance(call, cst.Call):
        return False
    qualified = ctx.callee(call)
    if qualified is not None:
        if nn_class_name(qualified) is not None or is_model_factory(qualified):
            return True
        fact = ctx.project.lookup(qualified)  # a class or builder of another file of the project
        return fact is not None and fact.builds_module
    written = dotted_name(call.func)
    if written is None or "." in written:
        return False
    if ctx.module_classes.is_module_name(written):
        return True
    builder = top_level_function(ctx, written)
    return builder is not None and depth < _MAX_BUILDER_DEPTH and returns_module(ctx, builder, depth + 1)


def _without_fluent_calls(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`Net()` for `Net().to(device).eval()`: the calls that return the module itself peeled off."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in MODULE_FLUENT_METHODS:
        expr = expr.func.value
    return expr


def top_level_function(ctx, name: str) -> cst.FunctionDef | None:
    """The file's top-level `def name`, if one."""
    for statement in ctx.module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def returns_module(ctx, function: cst.FunctionDef, depth: int = 0) -> bool:
    """Some `return` of the function gives a module built there (directly or through a local)."""
    built: dict[str, cst.Call] = {}
    returned: list[cst.BaseExpression] = []
    _collect(suite_statements(function.body), built, returned)
    for value in returned:
        value = _without_fluent_calls(value)
        if isinstance(value, cst.Name):
            value = built.get(value.value, value)
        if isinstance(value, cst.Call) and builds_module(ctx, value, depth):
            return True
    return False


def _collect(statements, built: dict[str, cst.Call], returned: list[cst.BaseExpression]) -> None:
    """Local names assigned a call, and returned expressions, skipping nested functions and classes."""
    for statement in statements:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                if isinstance(small, cst.Return) and small.value is not None:
                    returned.append(small.value)
                elif isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            built[target.target.value] = small.value
            continue
        for nested in nested_statement_lists(statement):
            _collect(nested, built, returned)


# What a module's output is ---------------------------------------------------------------------

_ACTIVATION_LAYERS = {"Softmax": "softmax", "Sigmoid": "sigmoid"}


def output_activation(ctx, call: cst.Call) -> str | None:
    """"softmax" or "sigmoid" when `call` runs a module whose last step is that activation.

    The module is an `nn.Sequential(..., nn.Softmax(dim=1))` built in this file, or an instance
    of a Module class of this file whose `forward` returns `torch.sigmoid(...)`, `F.softmax(...)`,
    `x.sigmoid()`, or such a layer or Sequential held in a `self.` attribute, on every `return`.
    """
    made = construction(ctx, call.func)
    return None if made is None else _activation_of_module(ctx, made, 0)


def construction(ctx, expr: cst.BaseExpression) -> cst.Call | None:
    """The call that built the module `expr` holds (`nn.Sequential(...)` for `model`)."""
    made = ctx.kinds.assigned(expr)
    made = _without_fluent_calls(made) if isinstance(made, cst.Call) else made
    return made if isinstance(made, cst.Call) else None


def _activation_of_module(ctx, made: cst.Call, depth: int) -> str | None:
    name = nn_class_name(ctx.callee(made))
    if name in _ACTIVATION_LAYERS:
        return _ACTIVATION_LAYERS[name]
    if name == "Sequential":
        layers = [arg.value for arg in made.args if arg.keyword is None and not arg.star]
        last = _without_fluent_calls(layers[-1]) if layers else None
        return _activation_of_module(ctx, last, depth + 1) if isinstance(last, cst.Call) and depth < 3 else None
    written = dotted_name(made.func)
    classdef = ctx.module_classes.class_named(written) if written is not None and "." not in written else None
    if classdef is None or depth >= 3:
        return None
    return _activation_of_forward(ctx, classdef, depth + 1)


def _activation_of_forward(ctx, classdef: cst.ClassDef, depth: int) -> str | None:
    """The activation every `return` of the class's `forward` ends in, if one."""
    forward = next(
        (s for s in classdef.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None
    )
    if forward is None:
        return None
    built: dict[str, cst.Call] = {}
    returned: list[cst.BaseExpression] = []
    _collect(suite_statements(forward.body), built, returned)
    found = {_activation_of_value(ctx, classdef, built.get(v.value, v) if isinstance(v, cst.Name) else v, depth)
             for v in returned}
    return found.pop() if len(found) == 1 else None


def _activation_of_value(ctx, classdef: cst.ClassDef, value: cst.BaseExpression, depth: int) -> str | None:
    if not isinstance(value, cst.Call):
        return None
    for activation, functions in (("softmax", SOFTMAX_FUNCTIONS), ("sigmoid", SIGMOID_FUNCTIONS)):
        if call_matches(ctx, value, functions, activation):
            return activation
    func = value.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        layer = ctx.self_attributes.in_class(classdef, func.attr.value)
        if isinstance(layer, cst.Call):
            return _activation_of_module(ctx, _without_fluent_calls(layer), depth)
    return None
