"""Size comparisons (`analysis/shape_checks.py`) and shape annotations (`analysis/shape_annotations.py`)."""

from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.imports import ImportTable
from torchlint.analysis.shape_annotations import annotated_shape
from torchlint.analysis.shape_checks import broadcast_conflict, element_count_mismatch, matmul_conflict


@pytest.mark.parametrize(
    ("have", "want", "expected"),
    [
        (("4", "4"), ["3", "5"], (16, 15)),
        (("4", "4"), ["2", "8"], None),
        (("4", "4"), ["-1", "3"], (16, 3)),
        (("4", "6"), ["-1", "3"], None),
        (("B", "T", "C"), ["B", "T", "C", "2"], (1, 2)),
        (("B", "T", "C"), ["B * T", "C"], None),
        (("B", "T", "C"), ["B", "T", "2", "C // 2"], None),  # C // 2 is not a plain factor
        (("B", "T", None), ["B", "7"], None),  # an unknown size never mismatches
        (("n", "3"), ["m", "3"], None),  # two names may be equal
        # One name only the new shape has may be any size, but the rest must divide the count.
        (("16", "1024"), ["B", "1", "28", "28"], (16384, 784)),
        (("16", "784"), ["B", "1", "28", "28"], None),
    ],
)
def test_element_counts(have, want, expected) -> None:
    assert element_count_mismatch(have, want) == expected


def test_sizes_disagree_only_as_unequal_literals() -> None:
    assert matmul_conflict(("8", "64"), ("32", "10")) == ("64", "32")
    assert matmul_conflict(("8", "k"), ("32", "10")) is None
    assert matmul_conflict(("3", "5"), ("5",)) is None
    assert broadcast_conflict(("8", "64"), ("63",)) == (1, "64", "63")
    assert broadcast_conflict(("8", "1"), ("1", "64")) is None
    assert broadcast_conflict(("n", "64"), ("m", "64")) is None


class _Imports:
    """What `annotated_shape` asks of a file context: qualified names through the imports."""

    def __init__(self, *imports: str) -> None:
        self.table = ImportTable()
        for line in imports:
            self.table.add(cst.parse_statement(line).body[0])

    def qualified_name(self, expr):
        return self.table.qualified_name(expr)


_CTX = _Imports("from typing import Annotated", "import torch", "from jaxtyping import Float", "from torch import Tensor")


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ('Annotated[torch.Tensor, Shape("B", 3, 32, 32)]', ("B", "3", "32", "32")),
        ('Float[Tensor, "b c h w"]', ("b", "c", "h", "w")),
        ('Float[Tensor, "batch 64"]', ("batch", "64")),
        ('Float[Tensor, "b _ #c h+1"]', ("b", None, None, None)),
        ('Float[Tensor, "*batch c"]', None),  # variadic: rank unknown
        ('Float[Tensor, "... c"]', None),
        ("torch.Tensor", None),
        ('Annotated[torch.Tensor, "a note"]', None),
        ('List[Tensor, "b c"]', None),  # not jaxtyping
    ],
)
def test_annotated_shapes(annotation: str, expected) -> None:
    assert annotated_shape(_CTX, cst.parse_expression(annotation)) == expected
