from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.imports import ImportTable
from torchlint.analysis.nn_layers import nn_class_name, parameterized_layer


class _Ctx:
    def __init__(self, imports: str) -> None:
        self.imports = ImportTable()
        for statement in cst.parse_module(imports).body:
            for small in statement.body:
                self.imports.add(small)

    def callee(self, call: cst.Call) -> str | None:
        return self.imports.qualified_name(call.func)


CTX = _Ctx("import torch\nimport torch.nn as nn\nfrom torch.nn import LayerNorm\nfrom mylib import Linear\n")


def layer(code: str) -> str | None:
    return parameterized_layer(CTX, cst.parse_expression(code))


@pytest.mark.parametrize(
    "code, expected",
    [
        ("nn.Linear(4, 4)", "Linear"),
        ("torch.nn.Conv2d(3, 8, 3)", "Conv2d"),
        ("LayerNorm(8)", "LayerNorm"),
        ("nn.BatchNorm1d(8, affine=False)", "BatchNorm1d"),  # running statistics remain
        ("nn.BatchNorm1d(8, affine=False, track_running_stats=False)", None),
        ("nn.LayerNorm(8, elementwise_affine=False)", None),
        ("nn.InstanceNorm2d(8)", None),
        ("nn.InstanceNorm2d(8, affine=True)", "InstanceNorm2d"),
        ("nn.ReLU()", None),
        ("nn.Dropout(0.1)", None),
        ("nn.Identity()", None),
        ("nn.CrossEntropyLoss(weight=w)", None),
        ("Linear(4, 4)", None),  # some other library's Linear
        ("nn.functional.linear(x, w)", None),
    ],
)
def test_parameterized_layer(code: str, expected: str | None) -> None:
    assert layer(code) == expected


def test_nn_class_name() -> None:
    assert nn_class_name("torch.nn.modules.linear.Linear") == "Linear"
    assert nn_class_name("torch.nn.Linear") == "Linear"
    assert nn_class_name("torch.nn.functional.relu") is None
    assert nn_class_name("torch.nn.utils.Something") is None
    assert nn_class_name("torch.Tensor") is None
    assert nn_class_name(None) is None
