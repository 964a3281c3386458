"""Shape arithmetic of `torch.nn` layers (`analysis/layer_sizes.py`) and the model inputs it is
followed from (`analysis/model_inputs.py`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.analysis.layer_sizes import constant, flattened, layer_of
from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

LAYERS = [
    ("Conv2d(3, 8, 3)", (2, 3, 32, 32), (2, 8, 30, 30)),
    ("Conv2d(3, 8, kernel_size=(3, 5), stride=2, padding=1)", (2, 3, 32, 32), (2, 8, 16, 15)),
    ("Conv2d(3, 8, 3, padding='same', dilation=2)", (2, 3, 17, 17), (2, 8, 17, 17)),
    ("Conv1d(4, 6, 5, 1, 0, 2)", (2, 4, 50), (2, 6, 42)),
    ("Conv2d(3, 8, 3)", (3, 32, 32), (8, 30, 30)),  # unbatched
    ("MaxPool2d(2)", (2, 3, 15, 15), (2, 3, 7, 7)),
    ("MaxPool2d(3, 2, 1, ceil_mode=True)", (2, 3, 16, 16), (2, 3, 9, 9)),
    ("MaxPool2d(2, ceil_mode=True)", (2, 3, 15, 15), (2, 3, 8, 8)),
    ("AvgPool2d(3, stride=2, padding=1)", (2, 3, 15, 15), (2, 3, 8, 8)),
    ("AdaptiveAvgPool2d((4, None))", (2, 3, 15, 9), (2, 3, 4, 9)),
    ("AdaptiveMaxPool1d(1)", (2, 3, 15), (2, 3, 1)),
    ("BatchNorm2d(3)", (2, 3, 5, 5), (2, 3, 5, 5)),
    ("Linear(5, 7)", (2, 3, 5), (2, 3, 7)),
]


@pytest.mark.parametrize(("code", "shape", "expected"), LAYERS)
def test_layer_shape_arithmetic(code: str, shape: tuple, expected: tuple) -> None:
    call = cst.parse_expression(code)
    layer = layer_of(code.split("(")[0], call)
    assert layer.reshape(shape) == expected


@pytest.mark.parametrize(("code", "shape", "expected"), LAYERS)
def test_layer_shape_arithmetic_agrees_with_torch(code: str, shape: tuple, expected: tuple) -> None:
    torch = pytest.importorskip("torch")
    assert tuple(eval(f"torch.nn.{code}")(torch.randn(*shape)).shape) == expected


def test_unknown_window_arguments_leave_the_shape_unknown() -> None:
    for code in ("Conv2d(3, 8, k)", "MaxPool2d(2, stride=s)", "MaxPool2d(2, ceil_mode=flag)", "Conv2d(3, 8, 3, padding=p)"):
        layer = layer_of(code.split("(")[0], cst.parse_expression(code))
        assert layer.reshape is None, code


def test_flatten_and_constants() -> None:
    assert flattened((1, -1), (2, 64, 5, 5)) == ((2, 1600), (64, 5, 5))
    assert flattened((2, 3), (2, 4, 6, 6)) == ((2, 4, 36), (6, 6))
    assert flattened((1, -1), (None, 64, None)) is None
    assert constant(cst.parse_expression("16 * 5 * 5")) == 400
    assert constant(cst.parse_expression("(28 - 4) // 2")) == 12
    assert constant(cst.parse_expression("16 * n")) is None


def _findings(source: str) -> list[str]:
    settings = Settings(rules=(get_rule("TL103"),))
    return [d.message for d in check_source(textwrap.dedent(source), "m.py", settings)]


SUMMARIES = """
    import torch.nn as nn
    from {module} import summary

    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8 * 32 * 32, 10))
    summary(model, {sizes})
"""


@pytest.mark.parametrize(
    ("module", "sizes"), [("torchsummary", "(3, 32, 32)"), ("torchinfo", "(16, 3, 32, 32)"), ("torchinfo", "input_size=(1, 3, 32, 32)")]
)
def test_summary_gives_the_input(module: str, sizes: str) -> None:
    (message,) = _findings(SUMMARIES.format(module=module, sizes=sizes))
    assert "gives 8*30*30 = 7200 for the input" in message


def test_summary_of_another_library_gives_nothing() -> None:
    assert _findings(SUMMARIES.format(module="mylib", sizes="(3, 32, 32)")) == []


def test_inputs_of_two_shapes_give_nothing() -> None:
    source = """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 2))
        model(torch.randn(1, 3, 8, 8))
        model(torch.randn(1, 3, 4, 4))
    """
    assert _findings(source) == []


def test_module_level_model_called_in_a_function() -> None:
    source = """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 2))

        def main():
            model(torch.randn(1, 3, 4, 4))

        def shadowed(model):
            model(torch.randn(1, 3, 5, 5))
    """
    (message,) = _findings(source)
    assert "3*4*4 = 48 for the input (1, 3, 4, 4)" in message


def test_lightning_example_input_array_as_documented() -> None:
    source = """
        import torch
        from torch import nn

        class Lit(nn.Module):
            def __init__(self):
                super().__init__()
                self.example_input_array = torch.Tensor(32, 1, 28, 28)
                self.conv = nn.Conv2d(1, 8, 3)
                self.head = nn.Linear(8 * 28 * 28, 10)

            def forward(self, x):
                return self.head(torch.flatten(self.conv(x), 1))
    """
    (message,) = _findings(source)
    assert "gives 8*26*26 = 5408 for the input (32, 1, 28, 28)" in message
