from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.imports import ImportTable
from torchlint.analysis.tensors import dtype_kind, integer_literal, requires_grad_true


class _Ctx:
    def __init__(self) -> None:
        self.imports = ImportTable()
        for statement in cst.parse_module("import torch\nfrom torch import long as i64\n").body:
            for small in statement.body:
                self.imports.add(small)

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        return self.imports.qualified_name(expr)


@pytest.mark.parametrize(
    "code, expected",
    [("1", True), ("-3", True), ("True", True), ("[1, \"a\"]", False), ("[[1, 2], [3, 4]]", True),
     ("(0, -1)", True), ("1.0", False), ("[1, 2.0]", False), ("[]", False), ("n", False), ("[n, 1]", False)],
)
def test_integer_literal(code: str, expected: bool) -> None:
    assert integer_literal(cst.parse_expression(code)) is expected


@pytest.mark.parametrize(
    "code, expected",
    [("torch.zeros(3, dtype=torch.long)", "integer"), ("torch.zeros(3, dtype=i64)", "integer"),
     ("torch.zeros(3, dtype=torch.bool)", "integer"), ("torch.zeros(3, dtype=int)", "integer"),
     ("torch.zeros(3, dtype=torch.float16)", "float"), ("torch.zeros(3, dtype=torch.double)", "float"),
     ("torch.zeros(3, dtype=torch.complex64)", "float"), ("torch.zeros(3, dtype=dt)", None),
     ("torch.zeros(3)", None)],
)
def test_dtype_kind(code: str, expected: str | None) -> None:
    assert dtype_kind(_Ctx(), cst.parse_expression(code)) == expected


def test_requires_grad_true() -> None:
    assert requires_grad_true(cst.parse_expression("torch.ones(2, requires_grad=True)"))
    assert not requires_grad_true(cst.parse_expression("torch.ones(2, requires_grad=flag)"))
    assert not requires_grad_true(cst.parse_expression("torch.ones(2)"))
