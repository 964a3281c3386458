"""Small syntactic helpers over libcst expressions, shared by analyses and rules."""

from __future__ import annotations

import libcst as cst


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


def argument(call: cst.Call, position: int, name: str) -> cst.BaseExpression | None:
    """The argument passed by keyword `name` or at `position`; None when absent or unknowable."""
    by_keyword = keyword_arg(call, name)
    if by_keyword is not None:
        return by_keyword.value
    positional = positional_args(call)
    if position < len(positional):
        return positional[position].value
    return None


def is_constant_true(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"
