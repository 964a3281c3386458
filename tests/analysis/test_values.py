"""`ctx.kinds`: the shared questions (tensor? module? number? where?) answered from the tensor facts.

Each snippet calls `probe(expr)` where the question is asked; the probe records the answer at
that point of the single traversal, exactly as a rule's `visit_Call` would.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.tensor_facts.domain import Device
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports, _ImportCollector
from torchlint.walker import Walker

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport math\n"


def _kind(ctx: FileContext, expr: cst.BaseExpression) -> str:
    if ctx.kinds.is_tensor(expr):
        return "tensor"
    if ctx.kinds.is_module(expr):
        return "module"
    if ctx.kinds.is_number(expr):
        return "number"
    return "unknown"


def _probe_each(source: str, answer) -> list:
    """`answer(ctx, call)` at each `probe(...)` call of the snippet, as a rule's `visit_Call` would."""
    source = HEADER + textwrap.dedent(source)
    ctx = FileContext("t.py", source, cst.parse_module(source), Settings(rules=()))
    _collect_top_level_imports(ctx)
    answers = []

    class Probe:
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "probe":
                answers.append(answer(ctx, node))

    Walker([_ImportCollector(ctx), ctx.values, Probe()], ctx.ancestors).walk(ctx.module)
    return answers


def probe(source: str) -> list[tuple[str, Device | None]]:
    """(kind, device of the tensor or None) for each `probe(expr)` of the snippet."""

    def answer(ctx: FileContext, call: cst.Call) -> tuple[str, Device | None]:
        expr = call.args[0].value
        facts = ctx.kinds.tensor(expr)
        return _kind(ctx, expr), facts.device if facts is not None else None

    return _probe_each(source, answer)


def test_tensors_and_their_devices_come_from_the_tensor_facts() -> None:
    answers = probe(
        """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(8, 3)
        probe(x)
        probe(x.to(device))
        probe(x.cuda().cpu())
        probe(F.relu(x))
        probe(torch.log_softmax(anything, dim=-1))
        """
    )
    assert answers == [
        ("tensor", Device.DEFAULT), ("tensor", Device.ACCELERATOR), ("tensor", Device.CPU),
        ("tensor", Device.DEFAULT), ("tensor", Device.UNKNOWN),
    ]


def test_flow_sensitive_answers_keep_what_both_branches_know() -> None:
    answers = probe(
        """
        def f(flag, device):
            y = torch.ones(2)
            if flag:
                y = y.cuda()
            else:
                y = y.to(device)
            probe(y)
            z = torch.zeros(3)
            for _ in range(3):
                z = z.cuda()
            probe(z)
        """
    )
    assert answers == [("tensor", Device.TARGET), ("tensor", Device.CONDITIONAL)]


def test_modules_numbers_and_unknowns() -> None:
    answers = probe(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x, mask=None, scale: float = 1.0):
                probe(self)
                probe(x)
                probe(mask)
                probe(scale)
                return self.fc(x)

        model = Net().to("cuda")
        probe(model)
        probe(model(torch.ones(2)).sum().item())
        probe(len([1, 2]))

        def g(batch, obj):
            probe(batch.to("cuda"))
            probe(obj.float())
        """
    )
    assert answers == [
        ("module", None), ("tensor", Device.MODULE), ("unknown", None), ("number", None),
        ("module", None), ("number", None), ("number", None),
        # Moved like a tensor, but it may be a batch or a module: not known to be a tensor.
        ("unknown", Device.ACCELERATOR), ("unknown", None),
    ]


def test_dtypes_and_module_level_constants() -> None:
    def answer(ctx: FileContext, call: cst.Call) -> tuple[str, bool]:
        device, dtype = call.args[0].value.args
        return ctx.code_for(ctx.kinds.resolve(device.value)), ctx.kinds.is_dtype(dtype.value)

    source = "mps = torch.device('mps')\nhalf = torch.float16\ndef f(x, out_dtype):\n    probe(x.to(mps, half))\n"
    assert _probe_each(source, answer) == [("torch.device('mps')", True)]
