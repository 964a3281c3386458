"""Small questions about literal operands and how an expression prints inside a larger one."""

from __future__ import annotations

import libcst as cst

_ONES = frozenset({"1", "1.", "1.0"})


def is_literal_one(expr: cst.BaseExpression) -> bool:
    """`1`, `1.` or `1.0` written as a literal."""
    return isinstance(expr, (cst.Integer, cst.Float)) and expr.value in _ONES


def is_number(expr: cst.BaseExpression) -> bool:
    """A numeric literal, possibly negated (`3`, `-2.5`)."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def needs_parentheses(expr: cst.BaseExpression) -> bool:
    """The expression must be parenthesised to take a method call (`(a + b).log1p()`)."""
    if expr.lpar:
        return False
    return not isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
