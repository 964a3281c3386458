"""Whether a value holds whole numbers whatever its dtype, so that `x + 1` is exact.

Counts and indices are whole: a node degree, `torch.bincount`, `argmax`, `x.nonzero()`, the
inverse indices and counts `torch.unique(..., return_counts=True)` returns, the indices of
`x.max(dim)`, `sort` or `topk`, a value given an integer dtype (`x.long()`, `.to(torch.int64)`,
`torch.zeros(n, dtype=torch.long)`), `floor`/`round`, a comparison (a bool mask) and its `.sum()`,
`torch.arange(n)`, `len(...)`; and so are the sums, products, concatenations, views, layout
changes (`einops.rearrange`), absolute values and float conversions of those.

A name is followed to what the walk last assigned it (`ctx.values`). Where that is unknown (a
tuple target, a value assigned in a branch or a loop, a list filled by `append`), every binding of
the name in its function must hold whole numbers: an assignment, its element of a tuple target,
a `for` target over whole numbers, an augmented assignment, `.append(v)`, `.extend(vs)`; those
before the assignment the walk is inside, outside a loop (`pos = torch.sign(pos) *
torch.log(pos.abs() + 1)` reads an earlier `pos`). A call
of a function of this file (or a method of the class, called on `self`) holds what each of its
`return`s gives at that position. A parameter, or a name bound nowhere in the function, holds
whole numbers when it is named like a count (`deg`, `counts`, `num_nodes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.module_attributes import first_parameter
from torchlint.analysis.names import argument, method_named, method_receiver, positional_args
from torchlint.analysis.tensors import INTEGER_DTYPES, dtype_kind

# Calls whose result holds whole numbers, whatever its dtype.
_WHOLE_NUMBER_CALLS = frozenset({
    "torch.bincount", "torch.floor", "torch.ceil", "torch.round", "torch.trunc", "torch.count_nonzero",
    "torch.argmax", "torch.argmin", "torch.argsort", "torch.nonzero", "torch_geometric.utils.degree",
})
_WHOLE_NUMBER_BUILTINS = frozenset({"len", "range", "int"})
_WHOLE_NUMBER_METHODS = frozenset({
    "long", "int", "short", "byte", "char", "bool", "floor", "ceil", "round", "trunc", "numel",
    "count_nonzero", "argmax", "argmin", "argsort", "nonzero", "bincount",
})
# Methods whose result holds whole numbers when their receiver does.
_WHOLE_NUMBER_PRESERVING = frozenset({
    "float", "double", "half", "to", "view", "reshape", "squeeze", "unsqueeze", "sum", "cumsum", "abs",
    "flatten", "repeat", "expand", "clone", "detach", "cpu", "cuda", "clamp", "clamp_min", "index_select",
    "gather", "max", "min", "contiguous", "transpose", "permute", "t", "unique", "unique_consecutive",
})
# Functions whose result holds whole numbers when their first argument does: a layout change
# (`einops.rearrange(pos, "... -> ... 1")`), an absolute value, a clamp.
_WHOLE_NUMBER_PRESERVING_FUNCTIONS = frozenset({
    "einops.rearrange", "einops.repeat", "torch.abs", "torch.flatten", "torch.reshape", "torch.squeeze",
    "torch.unsqueeze", "torch.clamp", "torch.flip",
})
# Functions that join their list argument's tensors: whole when every one of them is.
_JOINING = frozenset({"torch.cat", "torch.concat", "torch.stack", "torch.hstack", "torch.vstack"})
# Calls returning (values, indices...), or (values, inverse indices, counts): what follows the
# values is whole; the values are what the input is.
_WITH_INDICES = frozenset({
    "unique", "unique_consecutive", "max", "min", "sort", "topk", "kthvalue", "mode", "median", "nanmedian",
    "cummax", "cummin",
})
# Names that hold counts in graph and sequence code: a node's degree, a number of items.
_COUNT_NAME = re.compile(r"(?:^|_)(?:deg|degree|degrees|count|counts)$|^num_")
_WHOLE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply)
_WHOLE_AUGMENTED = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.FloorDivideAssign)
_MAX_DEPTH = 24
# What rounds a value to a whole number: `torch.round(v)`, `v.round()`, `v.long()`.
_ROUNDING_FUNCTIONS = frozenset({"torch.round", "torch.floor", "torch.ceil", "torch.trunc"})
_ROUNDING_METHODS = frozenset({"round", "floor", "ceil", "trunc", "long", "int"})

_Scope = cst.FunctionDef | cst.Module
# What a name read inside an assignment's value may be read under: the assignment itself, or a
# comprehension or function of its own there.
_OWN_SCOPES = (cst.Assign, cst.BaseComp, cst.Lambda, cst.FunctionDef)


@dataclass(frozen=True)
class _Binding:
    """One way a name gets its value: `value` itself, or its item at `position` (a tuple target);
    `value` None: a value nothing is known of (`with ... as name`, an import)."""

    value: cst.BaseExpression | cst.Param | None
    position: int | None = None


def rounded_to_whole(ctx) -> bool:
    """The node being visited is rounded to a whole number at once, or after other terms are added
    or subtracted (`torch.round(torch.exp(x) - 1)`, `(T - 1 - torch.log(a * x + 1)).round()`):
    an error of a unit in the last place of 1 cannot change the whole number that comes out."""
    ancestors = ctx.ancestors
    above = len(ancestors) - 1
    while above >= 0 and isinstance(ancestors[above], cst.BinaryOperation) \
            and isinstance(ancestors[above].operator, (cst.Add, cst.Subtract)):
        above -= 1
    if above < 1 or not isinstance(ancestors[above - 1], cst.Call):
        return False
    parent, call = ancestors[above], ancestors[above - 1]
    if isinstance(parent, cst.Arg):
        return ctx.callee(call) in _ROUNDING_FUNCTIONS and len(call.args) == 1
    return isinstance(parent, cst.Attribute) and call.func is parent and parent.attr.value in _ROUNDING_METHODS


class WholeNumbers:
    """Answers `holds(expr)` at the current point of the walk."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._bindings: dict[int, dict[str, list[_Binding]]] = {}

    def holds(self, expr: cst.BaseExpression) -> bool:
        walked = self._ctx.enclosing_function() or self._ctx.module
        return _Question(self._ctx, self.bindings, walked).holds(expr, walked, 0)

    def bindings(self, scope: _Scope) -> dict[str, list[_Binding]]:
        """Every binding of each name in the function (not in nested functions), in any order."""
        found = self._bindings.get(id(scope))
        if found is None:
            collector = _BindingCollector()
            if isinstance(scope, cst.FunctionDef):
                params = scope.params
                for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                    collector.add(param.name.value, _Binding(param))
                scope.body.visit(collector)
            else:
                for statement in scope.body:
                    statement.visit(collector)
            found = self._bindings[id(scope)] = collector.found
        return found


class _Question:
    """One question, with the names and functions being followed: met again, they are a cycle,
    which the other bindings decide."""

    def __init__(self, ctx, bindings, walked: _Scope) -> None:
        self._ctx = ctx
        self._bindings = bindings
        self._walked = walked
        self._following: set[tuple[object, str]] = set()

    def holds(self, expr: cst.BaseExpression, scope: _Scope, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        deeper = depth + 1
        if isinstance(expr, (cst.Integer, cst.Comparison)):
            return True
        if isinstance(expr, cst.Name):
            return self._name(expr.value, scope, deeper)
        if isinstance(expr, cst.Subscript):
            return self.holds(expr.value, scope, deeper)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            return self.holds(expr.expression, scope, deeper)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.FloorDivide):
                return True
            return isinstance(expr.operator, _WHOLE_OPERATORS) and self.holds(expr.left, scope, deeper) \
                and self.holds(expr.right, scope, deeper)
        if isinstance(expr, cst.IfExp):
            return self.holds(expr.body, scope, deeper) and self.holds(expr.orelse, scope, deeper)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return all(isinstance(element, cst.Element) and self.holds(element.value, scope, deeper)
                       for element in expr.elements)
        return isinstance(expr, cst.Call) and self._call(expr, scope, deeper)

    def _name(self, name: str, scope: _Scope, depth: int) -> bool:
        if scope is self._walked:
            # Where the walk is, the value last assigned is known, unless it is a list that an
            # `append` may have filled since, or it reads the name itself (`n = n.float()`).
            value = self._ctx.values.value_of(name)
            if isinstance(value, cst.BaseExpression) and not isinstance(value, cst.List):
                answer = self._following_while(("walk", name), lambda: self.holds(value, scope, depth))
                if answer is not None:
                    return answer
        answer = self._following_while((id(scope), name), lambda: self._every_binding(name, scope, depth))
        return True if answer is None else answer

    def _following_while(self, key, question) -> bool | None:
        """`question()`, with `key` marked as followed meanwhile; None when it already is."""
        if key in self._following:
            return None
        self._following.add(key)
        try:
            return question()
        finally:
            self._following.discard(key)

    def _every_binding(self, name: str, scope: _Scope, depth: int) -> bool:
        bindings = self._bindings(scope).get(name)
        if not bindings:
            return _COUNT_NAME.search(name.lower()) is not None
        pending = self._pending_binding(scope)
        reaching = next(
            (bindings[:index] for index, binding in enumerate(bindings) if binding.value is pending), bindings
        )
        return all(self._binding(name, binding, scope, depth) for binding in reaching)

    def _pending_binding(self, scope: _Scope) -> cst.BaseExpression | None:
        """The value of the assignment the walk is inside, outside any loop (`pos = torch.sign(pos)
        * torch.log(pos.abs() + 1)`): the `pos` it reads is an earlier one, so neither that
        binding nor those after it (`for layer in layers: pos = layer(pos)`) are ones it may hold."""
        if scope is not self._walked:
            return None
        ancestors = self._ctx.ancestors
        index = next((i for i in range(len(ancestors) - 1, -1, -1) if isinstance(ancestors[i], _OWN_SCOPES)), None)
        if index is None or not isinstance(ancestors[index], cst.Assign) or index + 1 == len(ancestors) \
                or ancestors[index + 1] is not ancestors[index].value:
            return None  # not inside an assignment's value (or inside a comprehension or lambda there)
        repeats = any(isinstance(node, (cst.For, cst.While)) for node in ancestors[:index])
        return None if repeats else ancestors[index].value

    def _binding(self, name: str, binding: _Binding, scope: _Scope, depth: int) -> bool:
        if binding.value is None:
            return False
        if isinstance(binding.value, cst.Param):
            return _COUNT_NAME.search(name.lower()) is not None
        if binding.position is None:
            return self.holds(binding.value, scope, depth)
        return self._item(binding.value, binding.position, scope, depth)

    def _item(self, value: cst.BaseExpression, position: int, scope: _Scope, depth: int) -> bool:
        """The item at `position` of what `value` gives holds whole numbers."""
        if isinstance(value, (cst.Tuple, cst.List)):
            elements = value.elements
            if position >= len(elements) or any(isinstance(element, cst.StarredElement) for element in elements):
                return False
            return self.holds(elements[position].value, scope, depth)
        if not isinstance(value, cst.Call):
            return False
        if self._named(value) in _WITH_INDICES:
            return position > 0 or self._input_holds(value, scope, depth)
        return self._every_return(value, scope, lambda returned, function: self._item(returned, position, function, depth))

    def _call(self, call: cst.Call, scope: _Scope, depth: int) -> bool:
        if self._integer_dtype(call):
            return True
        callee = self._ctx.callee(call)
        if callee is not None:
            return self._library_call(call, callee, scope, depth)
        if isinstance(call.func, cst.Name) and call.func.value in _WHOLE_NUMBER_BUILTINS:
            return call.func.value not in self._bindings(scope)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if method in _WHOLE_NUMBER_METHODS:
            return True
        if method in _WHOLE_NUMBER_PRESERVING:
            return not any(isinstance(arg.value, cst.Float) for arg in call.args) and self.holds(call.func.value, scope, depth)
        return self._every_return(call, scope, lambda returned, function: self.holds(returned, function, depth))

    def _library_call(self, call: cst.Call, callee: str, scope: _Scope, depth: int) -> bool:
        if callee == "torch.arange":
            return not any(isinstance(arg.value, cst.Float) for arg in call.args)
        if callee in ("torch.tensor", "torch.as_tensor"):
            data = argument(call, 0, "data")
            return data is not None and self.holds(data, scope, depth)
        if callee in _JOINING:
            joined = argument(call, 0, "tensors")
            return joined is not None and self.holds(joined, scope, depth)
        if callee in ("torch.unique", "torch.unique_consecutive"):
            return self._input_holds(call, scope, depth)
        if callee in _WHOLE_NUMBER_PRESERVING_FUNCTIONS:
            given = argument(call, 0, "input")
            return given is not None and not any(isinstance(arg.value, cst.Float) for arg in call.args) \
                and self.holds(given, scope, depth)
        return callee in _WHOLE_NUMBER_CALLS

    def _integer_dtype(self, call: cst.Call) -> bool:
        """Given an integer dtype: `x.to(torch.long)`, `torch.zeros(n, dtype=torch.int64)`."""
        if dtype_kind(self._ctx, call) == "integer":
            return True
        return any(self._ctx.qualified_name(arg.value) in INTEGER_DTYPES for arg in positional_args(call))

    def _input_holds(self, call: cst.Call, scope: _Scope, depth: int) -> bool:
        """`torch.unique(x)` / `x.unique()`: x holds whole numbers."""
        given = argument(call, 0, "input") if self._ctx.callee(call) is not None else method_receiver(call)
        return given is not None and self.holds(given, scope, depth)

    def _named(self, call: cst.Call) -> str | None:
        """`max` for `torch.max(...)` and `x.max(...)`."""
        callee = self._ctx.callee(call)
        if callee is not None:
            return callee.removeprefix("torch.") if callee.count(".") == 1 else None
        return call.func.attr.value if isinstance(call.func, cst.Attribute) else None

    def _every_return(self, call: cst.Call, scope: _Scope, question) -> bool:
        """`question(value, function)` holds for the value of each `return` of the function of this
        file that `call` calls; False for any other call, or a function that may return None."""
        function = self._function_called(call, scope)
        if function is None:
            return False
        returns = _Returns()
        function.body.visit(returns)
        if not returns.values or None in returns.values:
            return False
        answer = self._following_while(
            (id(function), "return"), lambda: all(question(value, function) for value in returns.values))
        return True if answer is None else answer

    def _function_called(self, call: cst.Call, scope: _Scope) -> cst.FunctionDef | None:
        """The top-level function, or the method of the class called on `self`, that `call` calls."""
        func = call.func
        if isinstance(func, cst.Name) and func.value not in self._bindings(scope):
            return self._ctx.tensors.function_named(func.value)
        classdef = self._ctx.enclosing_class()
        if classdef is None or not any(statement is scope for statement in classdef.body.body):
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == first_parameter(scope):
            return method_named(classdef, func.attr.value)
        return None


class _BindingCollector(cst.CSTVisitor):
    """The bindings of names in a function body, nested functions and classes left out."""

    def __init__(self) -> None:
        self.found: dict[str, list[_Binding]] = {}

    def add(self, name: str, binding: _Binding) -> None:
        self.found.setdefault(name, []).append(binding)

    # A nested function or class binds no number; what it assigns is its own.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        whole_step = isinstance(node.operator, _WHOLE_AUGMENTED)
        for name in target_names(node.target):
            self.add(name, _Binding(node.value if whole_step else None))

    def visit_For(self, node: cst.For) -> None:
        # An element of what is iterated over: whole numbers when all of it is.
        if isinstance(node.target, cst.Name):
            self.add(node.target.value, _Binding(node.iter))
        else:
            for name in target_names(node.target):
                self.add(name, _Binding(None))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self.add(name, _Binding(None))

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            for name in target_names(node.name.name):
                self.add(name, _Binding(None))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = node.asname.name if node.asname is not None else node.name
        while isinstance(bound, cst.Attribute):
            bound = bound.value
        if isinstance(bound, cst.Name):
            self.add(bound.value, _Binding(None))

    def visit_Call(self, node: cst.Call) -> None:
        # `items.append(v)`, `items.extend(vs)`: the list holds whole numbers only if v and vs do.
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and node.args \
                and func.attr.value in ("append", "extend", "insert"):
            self.add(func.value.value, _Binding(node.args[-1].value))

    def _target(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.add(target.value, _Binding(value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for position, element in enumerate(target.elements):
                inner = element.value
                if isinstance(inner, cst.Name) and not isinstance(element, cst.StarredElement):
                    self.add(inner.value, _Binding(value, position))
                else:
                    for name in target_names(inner):
                        self.add(name, _Binding(None))
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            # `counts[i] = v`: the tensor now holds v too.
            self.add(target.value.value, _Binding(value))


class _Returns(cst.CSTVisitor):
    """The values of a function's `return` statements (None for a bare `return`)."""

    def __init__(self) -> None:
        self.values: list[cst.BaseExpression | None] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)
