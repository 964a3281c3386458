from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import ClassFrames
from torchlint.analysis.module_values import top_level_function
from torchlint.analysis.names import dotted_name, isinstance_check
from torchlint.analysis.nn_layers import CONTAINERS, nn_class_name, parameter_free_class, parameterized_layer
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

_KINDS = {cst.List: "list", cst.Tuple: "tuple", cst.Dict: "dict", cst.ListComp: "list", cst.DictComp: "dict"}


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, cst.ListComp):
        return [value.elt]
    if isinstance(value, cst.DictComp):
        return [value.value]
    return []


class PlainContainerOfModules(Rule):
    """
    ## What it does
    Flags `self.layers = [nn.Linear(...), ...]` in an `nn.Module`: a Python list, tuple or dict
    (or a list/dict comprehension) of layers with parameters, when the class does not register
    them some other way (`nn.ModuleList(self.layers)`, `nn.Sequential(*self.layers)`,
    `add_module`). Layers added later count too: `self.layers.append(nn.Linear(...))`, an item
    stored by key, and a `layer` appended under `if isinstance(layer, nn.Module):`; so does a
    list that a function of the file fills with modules and returns in a tuple
    (`self.info, self.layers = create_modules(cfg)`). Not reported: a list of modules of a class
    of the file, derived from `nn.Module`, that owns no parameters (its `__init__` builds only
    parameter-free layers and torchaudio/torchvision transforms, such as a resampler): there is
    nothing to train or save, and such a list is often kept on one device on purpose.

    ## Why is this bad?
    `nn.Module` only registers submodules assigned directly or held in `nn.ModuleList` /
    `nn.ModuleDict` / `nn.Sequential`. Layers in a plain container are missing from
    `model.parameters()` (the optimizer never trains them), from `state_dict()` (not saved),
    and from `model.to(device)` (they stay on the CPU).

    ## Example
    ```python
    self.blocks = [nn.Linear(dim, dim) for _ in range(depth)]
    self.heads = {"cls": nn.Linear(dim, n_classes)}
    ```

    ## Use instead
    ```python
    self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
    self.heads = nn.ModuleDict({"cls": nn.Linear(dim, n_classes)})
    ```
    """

    code = "TL402"
    name = "plain-container-of-modules"
    summary = "Layers kept in a plain list/dict are not registered: use `nn.ModuleList`/`nn.ModuleDict`"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._classes = ClassFrames(ctx)
        # Per class: `self.<name>` assigned a plain list or dict -> (that assignment, "list"/"dict").
        self._plain: list[dict[str, tuple[cst.Assign, str]]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.enter(node)
        self._plain.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._plain.pop()
        for assignment, _, message in self._classes.leave().unregistered():
            self.report(assignment, message)

    def visit_Call(self, node: cst.Call) -> None:
        frame = self._classes.method_frame()
        if frame is None:
            return
        frame.register_call(node)
        # `nn.ModuleList(self.layers)`, `nn.Sequential(*self.layers)` register them after all.
        if nn_class_name(self.ctx.callee(node)) in CONTAINERS:
            for arg in node.args:
                name = self._classes.self_target(arg.value)
                if name is not None:
                    frame.registered.add(name)
            return
        # `self.layers.append(nn.Linear(...))` on a plain list.
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "insert"):
            name = self._classes.self_target(func.value)
            if name is None or name not in self._plain[-1] or not node.args:
                return
            added = node.args[-1].value
            elements = _elements(added) if func.attr.value == "extend" else [added]
            layer = next(filter(None, map(self._layer, elements)), None) or self._checked_module(added)
            if layer is not None:
                self._candidate(frame, name, layer, f"`{layer}` added with `.{func.attr.value}`")

    def visit_Assign(self, node: cst.Assign) -> None:
        frame = self._classes.method_frame()
        if frame is None or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Subscript):
            # `self.heads["cls"] = nn.Linear(...)` on a plain dict.
            name = self._classes.self_target(target.value)
            layer = self._layer(node.value)
            if name is not None and layer is not None and name in self._plain[-1]:
                self._candidate(frame, name, layer, f"`{layer}` stored by key")
            return
        if isinstance(target, cst.Tuple) and isinstance(node.value, cst.Call):
            self._unpacked_lists(frame, node, target)
            return
        name = self._classes.self_target(target)
        if name is None:
            return
        kind = _KINDS.get(type(node.value))
        if kind in ("list", "dict"):
            self._plain[-1][name] = (node, kind)
        layer = next(filter(None, map(self._layer, _elements(node.value))), None) if kind else None
        if layer is None:
            if self._builds_module(node.value):
                frame.registered.add(name)  # later re-assigned a real module (`nn.ModuleList(...)`)
            return
        self._candidate(frame, name, layer, f"`{layer}`", node, kind)

    def _unpacked_lists(self, frame, node: cst.Assign, target: cst.Tuple) -> None:
        """`self.info, self.layers = create_modules(cfg)`: a function of this file whose returned
        tuple holds, at that place, a local list it appended modules to."""
        func = node.value.func
        function = top_level_function(self.ctx, func.value) if isinstance(func, cst.Name) else None
        if function is None:
            return
        for position, made in _returned_module_lists(function, self._builds_module).items():
            name = self._classes.self_target(target.elements[position].value) if position < len(target.elements) else None
            if name is not None:
                how = f"`{self.ctx.code_for(made.func)}` appended to the list `{function.name.value}` returns"
                self._candidate(frame, name, self.ctx.code_for(made.func), how, node, "list")

    def _candidate(self, frame, name: str, layer: str, how: str, node=None, kind=None) -> None:
        if node is None:
            node, kind = self._plain[-1][name]
        if self.ctx.guards.in_version_gate(node) or any(candidate[0] is node for candidate in frame.candidates):
            return
        container = {"list": "nn.ModuleList", "tuple": "nn.ModuleList", "dict": "nn.ModuleDict"}[kind]
        frame.candidates.append(
            (
                node,
                name,
                f"`self.{name}` is a plain {kind} of modules ({how}): their parameters are not registered, "
                f"trained, saved or moved; wrap it in `{container}(...)`",
            )
        )

    def _layer(self, element: cst.BaseExpression) -> str | None:
        """The class name when `element` builds a layer with parameters."""
        if not isinstance(element, cst.Call):
            return None
        written = self.ctx.code_for(element.func)
        if parameterized_layer(self.ctx, element) is not None:
            return written
        if nn_class_name(self.ctx.callee(element)) in CONTAINERS and any(
            isinstance(arg.value, cst.Call) and self._layer(arg.value) for arg in element.args
        ):
            return written
        local = dotted_name(element.func)
        if local is not None and "." not in local and self.ctx.module_classes.is_module_name(local):
            # A class of the file that owns no parameters (a resampler, an activation) has none to lose.
            classdef = self.ctx.module_classes.class_named(local)
            return None if classdef is not None and parameter_free_class(self.ctx, classdef) else written
        return None

    def _checked_module(self, added: cst.BaseExpression) -> str | None:
        """`layer` appended inside `if isinstance(layer, nn.Module):`: a module, checked by the code."""
        if not isinstance(added, cst.Name):
            return None
        for node in reversed(self.ctx.ancestors):
            checked = isinstance_check(node.test) if isinstance(node, cst.If) else None
            if checked is not None and checked[0] == added.value and self.ctx.qualified_name(checked[1]) == "torch.nn.Module":
                return added.value
        return None

    def _builds_module(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        if nn_class_name(self.ctx.callee(value)) is not None:
            return True
        local = dotted_name(value.func)
        return local is not None and "." not in local and self.ctx.module_classes.is_module_name(local)


def _returned_module_lists(function: cst.FunctionDef, builds_module) -> dict[int, cst.Call]:
    """Positions of the function's returned tuple that hold a local list (`layers = []`) it
    appends modules to (`layers.append(nn.Conv2d(...))`, or a local built as one), with the
    construction of the first such module."""
    built: dict[str, cst.Call] = {}
    lists: set[str] = set()
    appended: dict[str, cst.Call] = {}
    returned: list[cst.BaseExpression] = []
    for node in nodes_in_order(function.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            local = node.targets[0].target.value
            if isinstance(node.value, cst.List) and not node.value.elements:
                lists.add(local)
            elif isinstance(node.value, cst.Call) and builds_module(node.value):
                built[local] = node.value
        elif isinstance(node, cst.Return) and isinstance(node.value, cst.Tuple):
            returned = [element.value for element in node.value.elements]
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "append" \
                and isinstance(node.func.value, cst.Name) and len(node.args) == 1:
            item = node.args[0].value
            made = built.get(item.value) if isinstance(item, cst.Name) else item
            if isinstance(made, cst.Call) and builds_module(made):
                appended.setdefault(node.func.value.value, made)
    return {position: appended[value.value] for position, value in enumerate(returned)
            if isinstance(value, cst.Name) and value.value in lists and value.value in appended}
