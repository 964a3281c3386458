from __future__ import annotations

import libcst as cst
import pytest

from tests.analysis.helpers import context_for


@pytest.mark.parametrize(
    "imports,expression,expected",
    [
        ("import torch", "torch.nn.functional.softmax", "torch.nn.functional.softmax"),
        ("import torch.nn.functional as F", "F.softmax", "torch.nn.functional.softmax"),
        ("from torch.nn import functional as F", "F.softmax", "torch.nn.functional.softmax"),
        ("from torch import softmax", "softmax", "torch.softmax"),
        ("import torch.nn.functional", "torch.nn.functional.softmax", "torch.nn.functional.softmax"),
        ("from torch import nn", "nn.Softmax", "torch.nn.Softmax"),
        ("import torch as th", "th.Tensor", "torch.Tensor"),
        ("from . import layers", "layers.Block", ".layers.Block"),
        ("import numpy as np", "softmax", None),
        ("from torch import *", "softmax", None),
    ],
)
def test_qualified_names(imports, expression, expected):
    ctx = context_for(f"{imports}\n")
    assert ctx.qualified_name(cst.parse_expression(expression)) == expected


def test_imports_under_if_and_try_are_known_before_the_walk():
    ctx = context_for(
        """
        try:
            import torch.nn.functional as F
        except ImportError:
            F = None
        if True:
            from torch import nn
        """
    )
    assert ctx.qualified_name(cst.parse_expression("F.relu")) == "torch.nn.functional.relu"
    assert ctx.qualified_name(cst.parse_expression("nn.Linear")) == "torch.nn.Linear"
    assert ctx.imports.local_names_for("torch.nn.functional") == ["F"]
    assert ctx.imports.imports_module("torch")


def test_modules_defined_in_except_handlers_are_module_classes():
    ctx = context_for(
        """
        import torch.nn as nn
        try:
            from fast import Block
        except ImportError:
            class Block(nn.Module):
                pass
        """
    )
    handler_class = ctx.module.body[1].handlers[0].body.body[0]
    assert ctx.module_classes.is_module(handler_class)
