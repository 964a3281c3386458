"""Small syntactic helpers over libcst expressions, shared by analyses and rules."""

from __future__ import annotations

import re

import libcst as cst


# Longer integer literals are no tensor size: CPython refuses decimal ones over 4,300 digits, and
# converting such a number back to text raises.
_MAX_SIZE_DIGITS = 20


# Type names that annotate a collection of values rather than one number.
SEQUENCE_TYPE_NAMES = frozenset({"List", "list", "Sequence", "Tuple", "tuple", "Iterable", "ndarray"})


def integer(text: str) -> int | None:
    """The value of an integer literal as written (`64`, `0x40`, `1_024`); None for text that is
    none, or too long to be a size."""
    if len(text) > _MAX_SIZE_DIGITS:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def is_name(expr: cst.BaseExpression | None, name: str) -> bool:
    """`expr` is the plain name `name`."""
    return isinstance(expr, cst.Name) and expr.value == name


def other_branch(choice: cst.CSTNode, branch: cst.CSTNode) -> cst.CSTNode | None:
    """The other branch of an `if` statement or a `... if ... else ...` expression than `branch`,
    one of its two (an `if` without `else` has none); None for anything else."""
    if not isinstance(choice, (cst.If, cst.IfExp)):
        return None
    return choice.orelse if branch is choice.body else choice.body if branch is choice.orelse else None


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """`torch.nn.functional` for that attribute chain; None for anything that is not one."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted_name(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


def method_name(call: cst.Call) -> str | None:
    """`view` for `x.view(...)`; None when the callee is not an attribute."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def called_name(call: cst.Call) -> str | None:
    """`evaluate` for `evaluate(...)`, `self.evaluate(...)` and `trainer.evaluate(...)`."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return call.func.value if isinstance(call.func, cst.Name) else None


def method_receiver(call: cst.Call) -> cst.BaseExpression | None:
    """`x` for `x.view(...)`."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value
    return None


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    """The plain positional arguments, stopping at the first `*args` (later ones have unknown positions)."""
    found = []
    for arg in call.args:
        if arg.keyword is not None or arg.star == "**":
            continue
        if arg.star == "*":
            break
        found.append(arg)
    return found


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


# NumPy's spellings, which torch's functions take for the same parameters (`x.min(axis=1, keepdims=True)`).
_NUMPY_SPELLINGS = {"dim": "axis", "keepdim": "keepdims"}


def torch_keyword(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument passed by keyword `name`, or by NumPy's spelling of it that torch also takes."""
    spelled = _NUMPY_SPELLINGS.get(name)
    return keyword_arg(call, name) or (keyword_arg(call, spelled) if spelled is not None else None)


def argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    """The argument passed by keyword `name` (or its NumPy spelling) or at `position`; None when
    absent or unknowable."""
    by_keyword = torch_keyword(call, name)
    if by_keyword is not None:
        return by_keyword.value
    positional = positional_args(call)
    if position < len(positional):
        return positional[position].value
    return None


def top_level_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """The functions a module defines at its top level, by name."""
    return {statement.name.value: statement for statement in module.body if isinstance(statement, cst.FunctionDef)}


def method_named(classdef: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` that the class body defines (the first one, if several)."""
    return next((statement for statement in classdef.body.body
                 if isinstance(statement, cst.FunctionDef) and statement.name.value == name), None)


def parameter_named(function: cst.FunctionDef, name: str) -> cst.Param | None:
    """The parameter `name` of `function` (not `*args` or `**kwargs`), or None."""
    params = function.params
    return next((param for param in (*params.posonly_params, *params.params, *params.kwonly_params)
                 if param.name.value == name), None)


def annotation_words(function: cst.FunctionDef | None, name: str) -> set[str] | None:
    """The words of `function`'s annotation of its parameter `name` (`{"Optional", "float"}` for
    `Optional[float]`), or None where it has none."""
    param = parameter_named(function, name) if function is not None else None
    if param is None or param.annotation is None:
        return None
    return set(re.findall(r"\w+", cst.Module([]).code_for_node(param.annotation.annotation)))


def has_parameter(function: cst.FunctionDef, name: str) -> bool:
    """Whether `name` is a parameter of `function` (a local that hides the module's)."""
    return parameter_named(function, name) is not None


def isinstance_check(test: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
    """(`x`, the type as written) for a test `isinstance(x, T)` of a plain name; None otherwise."""
    if not isinstance(test, cst.Call) or dotted_name(test.func) != "isinstance" or len(test.args) != 2:
        return None
    checked = test.args[0].value
    return (checked.value, test.args[1].value) if isinstance(checked, cst.Name) else None


def is_constant_true(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def single_index(subscript: cst.Subscript) -> cst.BaseExpression | None:
    """The index of `x[i]`: one element, not a slice nor several indices; None otherwise."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return subscript.slice[0].slice.value


def is_constant_none(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def is_constant_false(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def suite_statements(suite: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of an indented block; a one-line suite (`if x: a = 1`) comes as itself."""
    return list(suite.body) if isinstance(suite, cst.IndentedBlock) else [suite]


def assigns_name(suite: cst.BaseSuite, name: str, value) -> bool:
    """The block itself (not a nested one) holds `name = <v>` with `value(v)` true."""
    return any(
        isinstance(small, cst.Assign) and value(small.value)
        and any(isinstance(target.target, cst.Name) and target.target.value == name for target in small.targets)
        for line in suite_statements(suite) if isinstance(line, cst.SimpleStatementLine) for small in line.body
    )


def nested_statement_lists(statement: cst.CSTNode) -> list[list[cst.CSTNode]]:
    """The statement lists nested in a compound statement: its body, `else`, `finally`, handlers
    and match cases. An `elif` comes as a one-item list holding its `If`."""
    found = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, cst.If):
            found.append([block])
            continue
        if isinstance(block, (cst.Else, cst.Finally)):
            block = block.body
        if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            found.append(suite_statements(block))
    for part in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
        found.extend(nested_statement_lists(part))
    return found


def assigned_once(scope: cst.Module | cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The value of the one `name = ...` of the scope's own statements (nested blocks included,
    nested functions and classes not); None when assigned otherwise or more than once."""
    values = []
    pending = list(scope.body if isinstance(scope, cst.Module) else suite_statements(scope.body))
    while pending:
        statement = pending.pop()
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(statement, cst.SimpleStatementLine):
            values += [small.value for small in statement.body if isinstance(small, cst.Assign) and any(
                isinstance(target.target, cst.Name) and target.target.value == name for target in small.targets)]
            continue
        for nested in nested_statement_lists(statement):
            pending.extend(nested)
    return values[0] if len(values) == 1 else None
