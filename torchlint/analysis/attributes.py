"""What `self.<name>` holds in a class: the expression assigned to it, when the class assigns it once.

`self.criterion = nn.CrossEntropyLoss()` in `__init__` tells a rule what `self.criterion(...)`
calls in `forward` or `training_step`. Asked via `ctx.self_attributes.value_of(attribute)` with
the `self.<name>` expression at the current point of the walk. The class's methods are scanned
once, lazily, by reading their statements (no traversal of expressions). An attribute assigned
more than once, under different values, or also assigned by a tuple target is unknown (None).
A method that ends its set-up with `self.__dict__.update(locals())` (YOLOv5's model loaders) makes
each of its local names an attribute: `net = cv2.dnn.readNetFromONNX(w)` is `self.net`.
"""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import first_parameter
from torchlint.analysis.names import dotted_name, nested_statement_lists, suite_statements

_AMBIGUOUS = object()


class SelfAttributes:
    """`self.x` assignments of the classes of one file, collected on first use per class."""

    def __init__(self, ancestors: list[cst.CSTNode]) -> None:
        self._ancestors = ancestors
        self._classes: dict[int, dict[str, object]] = {}

    def value_of(self, attribute: cst.BaseExpression) -> cst.BaseExpression | None:
        """What `self.<name>` was assigned in the enclosing class, if that is one known expression."""
        if not (isinstance(attribute, cst.Attribute) and isinstance(attribute.value, cst.Name)):
            return None
        function, classdef = self._enclosing_method()
        if function is None or classdef is None or first_parameter(function) != attribute.value.value:
            return None
        return self.in_class(classdef, attribute.attr.value)

    def in_class(self, classdef: cst.ClassDef, name: str) -> cst.BaseExpression | None:
        """What `self.<name>` was assigned in `classdef`, if that is one known expression."""
        table = self._classes.get(id(classdef))
        if table is None:
            table = self._collect(classdef)
            self._classes[id(classdef)] = table
        value = table.get(name)
        return value if isinstance(value, cst.BaseExpression) else None

    def _enclosing_method(self) -> tuple[cst.FunctionDef | None, cst.ClassDef | None]:
        function = None
        for node in reversed(self._ancestors):
            node_class = type(node)  # exact classes: isinstance() misses on libcst's ABCs cost more
            if node_class is cst.FunctionDef:
                if function is not None:
                    return None, None  # a nested function: `self` may be anything
                function = node
            elif node_class is cst.ClassDef:
                return function, node
            elif node_class is cst.Lambda:
                return None, None
        return None, None

    def _collect(self, classdef: cst.ClassDef) -> dict[str, object]:
        table: dict[str, object] = {}
        for statement in classdef.body.body:
            if isinstance(statement, cst.FunctionDef):
                name = first_parameter(statement)
                if name is not None:
                    statements = suite_statements(statement.body)
                    self._scan(statements, name, table, _stores_locals(statements, name))
        return table

    def _scan(self, statements, self_name: str, table: dict[str, object], locals_stored: bool = False) -> None:
        for statement in statements:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    self._record(small, self_name, table, locals_stored)
            elif isinstance(statement, (cst.If, cst.For, cst.While, cst.Try, cst.With)):
                for nested in nested_statement_lists(statement):
                    self._scan(nested, self_name, table, locals_stored)

    @staticmethod
    def _record(small: cst.BaseSmallStatement, self_name: str, table: dict[str, object], locals_stored: bool) -> None:
        if isinstance(small, cst.Assign):
            targets = [(target.target, small.value) for target in small.targets]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            targets = [(small.target, small.value)]
        elif isinstance(small, cst.AugAssign):
            targets = [(small.target, None)]
        else:
            return
        for target, value in targets:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    SelfAttributes._store(element.value, None, self_name, table, locals_stored)
            else:
                SelfAttributes._store(target, value, self_name, table, locals_stored)

    @staticmethod
    def _store(target, value, self_name: str, table: dict[str, object], locals_stored: bool) -> None:
        if isinstance(target, cst.Name) and locals_stored:
            name = target.value  # a local that `self.__dict__.update(locals())` makes an attribute
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == self_name:
            name = target.attr.value
        else:
            return
        table[name] = value if name not in table and value is not None else _AMBIGUOUS


def _stores_locals(statements, self_name: str) -> bool:
    """The method's own statements hold `self.__dict__.update(locals())`."""
    for line in statements:
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and dotted_name(call.func) == f"{self_name}.__dict__.update" \
                and len(call.args) == 1 and isinstance(given := call.args[0].value, cst.Call) \
                and dotted_name(given.func) == "locals":
            return True
    return False
