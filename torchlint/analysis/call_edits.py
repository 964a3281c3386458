"""Rewritten copies of a call for fixes: add an argument, rename the callee, keep the layout.

Fixes print the edited node with `ctx.code_for(...)`, so the arguments keep their own spelling,
comments and line breaks.
"""

from __future__ import annotations

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")
_ONE_SPACE = cst.SimpleWhitespace(" ")


def keyword(name: str, value: cst.BaseExpression | str) -> cst.Arg:
    """`name=value` written without spaces around `=`."""
    if isinstance(value, str):
        value = cst.parse_expression(value)
    return cst.Arg(
        keyword=cst.Name(name), value=value, equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)
    )


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional argument passed by keyword instead."""
    return arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE))


def _separator(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace between two arguments of this call (a newline and indent in a tall call)."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            return _without_comment(arg.comma.whitespace_after)
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return _without_comment(call.whitespace_before_args)
    return _ONE_SPACE


def _without_comment(space: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    if isinstance(space, cst.ParenthesizedWhitespace):
        return space.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return space


def with_arguments(call: cst.Call, first: list[cst.Arg] = (), last: list[cst.Arg] = ()) -> cst.Call:
    """The call with `first` inserted before its arguments and `last` appended after them.

    In a call written over several lines the new arguments get lines of their own, and a trailing
    comma stays trailing.
    """
    separator = _separator(call)
    arguments = list(call.args)
    if last and arguments:
        final = arguments[-1]
        closing_comma = final.comma if isinstance(final.comma, cst.Comma) else None
        closing_space = final.whitespace_after_arg
        arguments[-1] = final.with_changes(comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=_NO_SPACE)
        appended = [arg.with_changes(comma=cst.Comma(whitespace_after=separator)) for arg in last]
        appended[-1] = appended[-1].with_changes(
            comma=closing_comma.with_changes() if closing_comma is not None else cst.MaybeSentinel.DEFAULT,
            whitespace_after_arg=closing_space,
        )
    else:
        appended = [arg.with_changes(comma=cst.Comma(whitespace_after=separator)) for arg in last]
        if appended:
            appended[-1] = appended[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    inserted = [arg.with_changes(comma=cst.Comma(whitespace_after=separator)) for arg in first]
    if inserted and not arguments and not appended:
        inserted[-1] = inserted[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=[*inserted, *arguments, *appended])


def with_callee(call: cst.Call, callee: str) -> cst.Call:
    """The call with its function replaced by the dotted name `callee`."""
    return call.with_changes(func=cst.parse_expression(callee))
