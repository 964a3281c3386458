"""torch_api helpers: the operand of `torch.f(x)` / `x.f()`, and what a call computes."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.torch_api import LOG_FUNCTIONS, SUM_FUNCTIONS, called_function, unary_operand
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports
from torchlint.walker import Walker


class _Probe:
    def __init__(self, ctx: FileContext, ask) -> None:
        self.ctx, self.ask, self.answers = ctx, ask, []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.answers.append(self.ask(self.ctx, node.args[0].value))


def ask(source: str, question) -> list:
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    ctx = FileContext("t.py", source, module, Settings(rules=()))
    _collect_top_level_imports(ctx)
    probe = _Probe(ctx, question)
    Walker([ctx.values, probe], ctx.ancestors).walk(module)
    return probe.answers


def _log_operand(ctx, call):
    operand = unary_operand(ctx, call, LOG_FUNCTIONS, "log")
    return None if operand is None else ctx.code_for(operand)


def test_unary_operand() -> None:
    source = """
    import math
    import numpy as np
    import torch
    probe(torch.log(a + 1))
    probe(torch.log(input=b))
    probe((c * 2).log())
    probe(np.log(d))
    probe(math.log(e))
    probe(self.log("loss", f))
    probe(torch.exp(g))
    """
    assert ask(source, _log_operand) == ["a + 1", "b", "(c * 2)", None, None, None, None]


def test_unary_operand_of_methods_with_arguments() -> None:
    def summed(ctx, call):
        operand = unary_operand(ctx, call, SUM_FUNCTIONS, "sum", method_takes_args=True)
        return None if operand is None else ctx.code_for(operand)

    assert ask("import torch\nprobe(x.sum(1))\nprobe(torch.sum(y, dim=0))\n", summed) == ["x", "y"]


def test_called_function() -> None:
    source = """
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.modules.loss import CrossEntropyLoss

    class Model(nn.Module):
        def __init__(self):
            self.criterion = nn.BCELoss()

        def forward(self, x, y, make_loss):
            probe(F.cross_entropy(x, y))
            probe(nn.NLLLoss()(x, y))
            criterion = CrossEntropyLoss(ignore_index=-1)
            probe(criterion(x, y))
            probe(self.criterion(x, y))
            loss_fn = F.mse_loss
            probe(loss_fn(x, y))
            probe(make_loss()(x, y))
            probe(self.other(x))
    """
    assert ask(source, called_function) == [
        "torch.nn.functional.cross_entropy", "torch.nn.NLLLoss", "torch.nn.CrossEntropyLoss", "torch.nn.BCELoss",
        "torch.nn.functional.mse_loss", None, None,
    ]
