"""Layouts through permutes/views (`torchlint/analysis/layouts.py`): which `.view()` merges break.

Each case is checked against real torch behaviour in `test_verdicts_match_torch` (CPU is enough:
view compatibility only depends on sizes and strides).
"""

from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.layouts import shape_args, view_merge_breaks
from torchlint.analysis.tensor_facts.domain import TensorFacts
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports, _ImportCollector
from torchlint.walker import Walker


class _Recorder:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.verdicts: list[bool] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "view":
            facts = self.ctx.tensors.facts(node.func.value)
            layout = facts.layout if isinstance(facts, TensorFacts) else None
            args = shape_args(node)
            self.verdicts.append(
                layout is not None and args is not None
                and view_merge_breaks(self.ctx, layout, args, self.ctx.tensors.single_dims())
            )


def verdicts(source: str) -> list[bool]:
    ctx = FileContext("t.py", source, cst.parse_module(source), Settings(rules=()))
    _collect_top_level_imports(ctx)
    recorder = _Recorder(ctx)
    Walker([_ImportCollector(ctx), ctx.values, recorder], ctx.ancestors).walk(ctx.module)
    return recorder.verdicts


# (statement using x of shape (b, h, n, d) = (2, 3, 4, 5), expected verdict)
CASES = [
    ("x.transpose(1, 2).view(b, -1, h * d)", True),
    ("x.transpose(1, 2).view(b, n, h * d)", True),
    ("x.permute(0, 2, 1, 3).view(b, n, -1)", True),
    ("x.permute(0, 2, 3, 1).view(b, -1, h)", False),
    ("x.transpose(1, 2).view(b, n, h, d)", False),
    ("x.transpose(1, 2).contiguous().view(b, n, h * d)", False),
    ("x.transpose(0, 1).view(h, b, n * d)", False),
    ("x.mT.view(b, h, d * n)", True),
    ("x.transpose(2, 3).view(b * h, d, n)", False),
    ("x.transpose(2, 3).view(b, h, -1)", True),
    ("x.movedim(1, -1).view(b, n * d, h)", False),
    ("x.movedim(1, -1).view(b, n, d * h)", True),
    ("x.permute(3, 2, 1, 0).view(-1)", True),
    ("x.unsqueeze(2).expand(b, h, 7, n, d).view(b, h * 7, n, d)", True),
    ("x.unsqueeze(2).expand(b, h, 7, n, d).view(b, h, 7, n * d)", False),
    ("x[:, None].transpose(1, 2).view(b, h, n, d)", False),
    ("x[:1].permute(0, 2, 3, 1).view(1, -1, h)", False),
]


@pytest.mark.parametrize(("statement", "expected"), CASES)
def test_view_merge_verdicts(statement: str, expected: bool) -> None:
    source = f"def f(x, b, h, n, d):\n    b, h, n, d = x.shape\n    return {statement}\n"
    assert verdicts(source) == [expected]


@pytest.mark.parametrize(("statement", "expected"), CASES)
def test_verdicts_match_torch(statement: str, expected: bool) -> None:
    torch = pytest.importorskip("torch")
    b, h, n, d = 2, 3, 4, 5
    x = torch.randn(b, h, n, d)
    try:
        eval(statement, {"x": x, "b": b, "h": h, "n": n, "d": d})
        raised = False
    except RuntimeError:
        raised = True
    assert raised == expected


def test_follows_local_variables_flow_sensitively() -> None:
    source = (
        "def f(x, b, n, flag):\n"
        "    x = x.view(b, n, 8, 64)\n"
        "    x = x.transpose(1, 2)\n"
        "    y = x.view(b, 8, -1)\n"
        "    z = x.reshape(b, 8, -1)\n"
        "    w = z.view(b, -1)\n"
        "    if flag:\n"
        "        x = x.contiguous()\n"
        "    return x.view(b, -1)\n"
    )
    assert verdicts(source) == [False, True, False, False]


def test_unknown_merges_stay_silent() -> None:
    source = (
        "def f(x, shape, b):\n"
        "    a = x.transpose(1, 2).view(shape)\n"
        "    c = x.transpose(1, 2).view(*shape)\n"
        "    e = x.t().view(-1)\n"
        "    return x.transpose(1, 2).view(b, -1)\n"
    )
    # `.t()` is written for matrices (on a vector it is a no-op nobody writes), so its flattening
    # view is reported; the last view merges the swapped dims 1 and 2 into the -1 whatever the
    # rank of x, so it is reported without knowing the rank.
    assert verdicts(source) == [False, False, True, True]
