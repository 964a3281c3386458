"""Adding arguments to a call keeps its layout: one line stays one line, tall calls stay tall."""

from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.call_edits import as_keyword, keyword, with_arguments, with_callee

_MODULE = cst.parse_module("")


def code(node: cst.CSTNode) -> str:
    return _MODULE.code_for_node(node)


@pytest.mark.parametrize(
    ("call", "appended", "prepended"),
    [
        ("f()", "f(w=True)", 'f("cuda")'),
        ("f(a)", "f(a, w=True)", 'f("cuda", a)'),
        ("f(a, b)", "f(a, b, w=True)", 'f("cuda", a, b)'),
        ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    w=True,\n)", 'f(\n    "cuda",\n    a,\n    b,\n)'),
        ("f(\n    a,\n    b\n)", "f(\n    a,\n    b,\n    w=True\n)", 'f(\n    "cuda",\n    a,\n    b\n)'),
        ("f(a, # note\n  b)", "f(a, # note\n  b,\n  w=True)", 'f("cuda",\n  a, # note\n  b)'),
    ],
)
def test_with_arguments(call: str, appended: str, prepended: str) -> None:
    node = cst.parse_expression(call)
    assert code(with_arguments(node, last=[keyword("w", "True")])) == appended
    assert code(with_arguments(node, first=[cst.Arg(cst.SimpleString('"cuda"'))])) == prepended


def test_as_keyword_and_with_callee() -> None:
    node = cst.parse_expression("torch.cuda.amp.autocast(True, dtype=x)")
    renamed = with_callee(node.with_changes(args=[as_keyword(node.args[0], "enabled"), node.args[1]]), "torch.amp.autocast")
    assert code(renamed) == "torch.amp.autocast(enabled=True, dtype=x)"
