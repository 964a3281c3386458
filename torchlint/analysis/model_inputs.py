"""Known inputs of the models of one file: what their layer sizes are followed from.

A model is an `nn.Sequential(...)` call or a Module class of the file. Its input's shape is known
from:
- a call of the model on one tensor whose sizes the tensor-facts model knows as literals
  (`model(torch.randn(1, 3, 32, 32))`, `x = torch.zeros(8, 1, 28, 28); net(x)`, `Net()(x)`),
  where the name is bound to that model only (`model = Net().to(device)` counts);
- `torchsummary.summary(model, (3, 32, 32))` (sizes without the batch) and
  `torchinfo.summary(model, (1, 3, 32, 32))`;
- `self.example_input_array = torch.randn(...)` (Lightning) or `self.example_input` in a Module class;
- the shape annotation of `forward`'s input (`Float[Tensor, "b 3 32 32"]`).
A model seen with inputs of two different shapes is left alone: which one is meant is not known.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from torchlint.analysis.layer_sizes import Input, Shape, constant
from torchlint.analysis.modules import last_word
from torchlint.analysis.names import argument, dotted_name, has_parameter
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.shape_annotations import annotated_shape
from torchlint.analysis.shape_checks import known_sizes, literal

Model = cst.ClassDef | cst.Call
# Methods that return the model they are called on.
_SAME_MODEL_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "double", "half", "requires_grad_"})
# Summary functions -> whether the sizes they are given include the batch.
_SUMMARIES = {"torchsummary.summary": False, "torchinfo.summary": True}
_EXAMPLE_INPUTS = frozenset({"example_input_array", "example_input"})


class ModelInputs:
    def __init__(self, ctx) -> None:
        self._ctx = ctx
        # (id of the enclosing function or 0, name) -> the model it is bound to there; None once
        # it is bound to anything else too.
        self._bound: dict[tuple[int, str], Model | None] = {}
        self._seeds: dict[int, tuple[Model, list[Input]]] = {}

    def assignment(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Attribute) and target.attr.value in _EXAMPLE_INPUTS:
            classdef = self._ctx.enclosing_class()
            if classdef is not None and dotted_name(target.value) == "self":
                self._add(classdef, self._tensor_input(node.value))
        elif isinstance(target, cst.Name):
            model = self._model(node.value)
            function = self._ctx.enclosing_function()
            key = (id(function) if function is not None else 0, target.value)
            if key in self._bound or model is not None:
                self._bound[key] = model if self._bound.get(key, model) is model else None

    def call(self, node: cst.Call) -> None:
        func = node.func
        if last_word(func) == "summary":
            qualified = self._ctx.callee(node)
            if qualified in _SUMMARIES:
                self._summary(node, _SUMMARIES[qualified])
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        model = self._bound_model(func.value) if isinstance(func, cst.Name) else self._model(func)
        if model is not None:
            self._add(model, self._tensor_input(node.args[0].value))

    def classdef(self, node: cst.ClassDef) -> None:
        """Seed a Module class from the shape annotation of `forward`'s input."""
        forward = next((s for s in node.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None)
        params = forward.params.params if forward is not None else ()
        if len(params) >= 2 and params[1].annotation is not None:
            sizes = annotated_shape(self._ctx, params[1].annotation.annotation)
            self._add(node, _input(params[1].annotation, sizes))

    def known(self) -> Iterator[tuple[Model, Input]]:
        """Each model with the one input shape it is given (the batch size aside)."""
        for model, seeds in self._seeds.values():
            if len({seed.shape[1:] for seed in seeds}) == 1:
                yield model, seeds[0]

    def _add(self, model: Model, seed: Input | None) -> None:
        if seed is not None:
            self._seeds.setdefault(id(model), (model, []))[1].append(seed)

    def _bound_model(self, name: str) -> Model | None:
        """The model `name` holds in the enclosing function, else at module level."""
        function = self._ctx.enclosing_function()
        if function is not None and (id(function), name) in self._bound:
            return self._bound[(id(function), name)]
        return self._bound.get((0, name)) if function is None or not has_parameter(function, name) else None

    def _model(self, expr: cst.BaseExpression) -> Model | None:
        """The model `expr` builds: `nn.Sequential(...)`, `Net(...)`, also followed by `.to(device)`."""
        while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
               and expr.func.attr.value in _SAME_MODEL_METHODS):
            expr = expr.func.value
        if not isinstance(expr, cst.Call):
            return None
        if nn_class_name(self._ctx.callee(expr)) == "Sequential":
            return expr
        if isinstance(expr.func, cst.Name) and self._ctx.qualified_name(expr.func) in (None, expr.func.value):
            return self._ctx.module_classes.class_named(expr.func.value)
        return None

    def _tensor_input(self, expr: cst.BaseExpression) -> Input | None:
        return _input(expr, known_sizes(self._ctx.tensors.facts(expr)))

    def _summary(self, node: cst.Call, with_batch: bool) -> None:
        model_expr, sizes_expr = argument(node, 0, "model"), argument(node, 1, "input_size")
        if not isinstance(model_expr, cst.Name) or not isinstance(sizes_expr, (cst.Tuple, cst.List)):
            return
        model = self._bound_model(model_expr.value)
        sizes = [constant(element.value) for element in sizes_expr.elements]
        if model is None or None in sizes:
            return
        self._add(model, _input(sizes_expr, tuple(map(str, sizes if with_batch else ["B", *sizes]))))


def _input(node: cst.CSTNode, sizes: tuple[str | None, ...] | None) -> Input | None:
    """An input of literal sizes after the batch (which may be a name or unknown)."""
    if sizes is None or len(sizes) < 2 or not all(size is not None and literal(size) is not None for size in sizes[1:]):
        return None
    shape: Shape = (literal(sizes[0]), *(literal(size) for size in sizes[1:]))
    return Input(node, shape)

