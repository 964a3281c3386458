"""The shared value-kind analysis (`ctx.kinds`): what an expression holds at a point of the walk.

Each snippet calls `probe(expr)` where the question is asked; the probe records the answer at
that point of the single traversal, exactly as a rule's `visit_Call` would.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.values import Device, Kind, ValueInfo
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports, _ImportCollector
from torchlint.walker import Walker


class _Probe:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.answers: list[ValueInfo] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.answers.append(self.ctx.kinds.info(node.args[0].value))


def probe(source: str) -> list[ValueInfo]:
    if source.startswith(HEADER):
        source = HEADER + textwrap.dedent(source[len(HEADER):])
    ctx = FileContext("t.py", source, cst.parse_module(source), Settings(rules=()))
    _collect_top_level_imports(ctx)
    recorder = _Probe(ctx)
    Walker([_ImportCollector(ctx), ctx.values, ctx.kinds, recorder], ctx.ancestors).walk(ctx.module)
    return recorder.answers


def one(source: str) -> ValueInfo:
    (answer,) = probe(source)
    return answer


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport math\n"


def test_factories_without_device_are_on_the_default_device() -> None:
    info = one(HEADER + "x = torch.zeros(3, 4)\nprobe(x)\n")
    assert info.kind is Kind.TENSOR
    assert info.device is Device.DEFAULT
    assert info.scalar is False
    assert isinstance(info.origin, cst.Call) and info.origin.func.attr.value == "zeros"


def test_factory_device_argument() -> None:
    answers = probe(
        HEADER
        + """
        def f(x, device):
            probe(torch.arange(4, device=x.device))
            probe(torch.ones(2, device=device))
            probe(torch.ones(2, device="cpu"))
            probe(torch.ones(2, device="cuda:0"))
            probe(torch.ones(2, device=torch.device("cpu")))
        """
    )
    assert [a.device for a in answers] == [
        Device.TARGET, Device.TARGET, Device.CPU, Device.ACCELERATOR, Device.CPU,
    ]
    assert all(a.origin is None for a in answers)


def test_scalar_factories_are_zero_dim() -> None:
    answers = probe(HEADER + "n = 3\nprobe(torch.tensor(3.0))\nprobe(torch.tensor(len([1])))\nprobe(torch.tensor([1.0, 2.0]))\nprobe(torch.tensor(n))\n")
    assert [a.scalar for a in answers] == [True, True, False, True]
    assert all(a.device is Device.DEFAULT for a in answers)


def test_tensor_data_keeps_its_device() -> None:
    info = one(HEADER + "y = torch.ones(2).cuda()\nprobe(torch.as_tensor(y))\n")
    assert info.kind is Kind.TENSOR and info.device is Device.ACCELERATOR


def test_moves_and_dtype_conversions() -> None:
    answers = probe(
        HEADER
        + """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(8, 3)
        probe(x.to(device))
        probe(x.cuda())
        probe(x.to(torch.float16))
        probe(x.float())
        probe(x.cuda().cpu())
        probe(x.to("cpu"))
        probe(x.to(device, torch.float16))
        probe(x.to(dtype=torch.float16))
        probe(x.to(something))
        """
    )
    assert [a.device for a in answers] == [
        Device.ACCELERATOR, Device.ACCELERATOR, Device.DEFAULT, Device.DEFAULT, Device.CPU, Device.CPU,
        Device.ACCELERATOR, Device.DEFAULT, Device.UNKNOWN,
    ]
    assert all(a.kind is Kind.TENSOR for a in answers)


def test_reassignment_from_itself_is_understood_with_the_old_value() -> None:
    answers = probe(HEADER + "x = torch.zeros(3)\nx = x.cuda()\nx = x.float()\nprobe(x)\n")
    assert answers[0].kind is Kind.TENSOR and answers[0].device is Device.ACCELERATOR


def test_flow_sensitivity_and_branch_merge() -> None:
    answers = probe(
        HEADER
        + """
        def f(flag, device):
            x = torch.zeros(3)
            probe(x)
            if flag:
                x = x.to(device)
            probe(x)
            y = torch.ones(2)
            if flag:
                y = y.cuda()
            else:
                y = y.to(device)
            probe(y)
        """
    )
    assert answers[0].device is Device.DEFAULT
    assert answers[1].kind is Kind.UNKNOWN  # different values on the two paths
    assert answers[2].kind is Kind.UNKNOWN


def test_arithmetic_combines_devices_and_keeps_the_origin() -> None:
    answers = probe(
        HEADER
        + """
        a = torch.arange(10)
        b = a.float() / 10 + 1
        probe(b)
        c = b + torch.ones(10).cuda()
        probe(c)
        probe(3 * 2.0 + len(b))
        probe(b.sum())
        probe(b.sum(dim=0))
        """
    )
    b, c, number, total, partial = answers
    assert b.device is Device.DEFAULT and b.origin is not None and b.origin.func.attr.value == "arange"
    assert c.device is Device.ACCELERATOR and c.origin is None
    assert number.kind is Kind.NUMBER
    assert total.scalar is True and total.kind is Kind.TENSOR
    assert partial.scalar is None


def test_python_numbers() -> None:
    answers = probe(
        HEADER
        + """
        t = torch.ones(3)
        probe(t.item())
        probe(float(t))
        probe(len(t))
        probe(t.size(0))
        probe(t.shape[0])
        probe(t.ndim)
        probe(math.sqrt(2) * 3)
        probe(t.size())
        """
    )
    assert [a.kind for a in answers] == [Kind.NUMBER] * 7 + [Kind.UNKNOWN]


def test_modules_and_self() -> None:
    answers = probe(
        HEADER
        + """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                probe(self)
                self.fc = nn.Linear(2, 2)

            def forward(self, x, mask=None, scale: float = 1.0):
                probe(x)
                probe(mask)
                probe(scale)
                probe(self.fc(x))
                return x

        model = Net()
        probe(model)
        probe(model.to("cuda"))
        probe(nn.Sequential(nn.Linear(2, 2)))
        probe(model.eval())
        probe(model.parameters())
        """
    )
    kinds = [a.kind for a in answers]
    assert kinds == [
        Kind.MODULE, Kind.TENSOR, Kind.UNKNOWN, Kind.NUMBER, Kind.UNKNOWN,
        Kind.MODULE, Kind.MODULE, Kind.MODULE, Kind.MODULE, Kind.UNKNOWN,
    ]
    assert answers[1].model_input


def test_forward_factories_are_marked_and_annotations_count() -> None:
    answers = probe(
        HEADER
        + """
        class Block(nn.Module):
            def forward(self, x):
                pos = torch.arange(x.shape[1])
                probe(pos)
                return x + pos

        def helper(t: torch.Tensor, n: int):
            probe(t)
            probe(n)
            probe(torch.zeros(n))
        """
    )
    pos, t, n, z = answers
    assert pos.device is Device.DEFAULT and pos.origin_in_forward
    assert t.kind is Kind.TENSOR and not t.model_input
    assert n.kind is Kind.NUMBER
    assert z.device is Device.DEFAULT and not z.origin_in_forward


def test_unknown_receivers_stay_unknown() -> None:
    answers = probe(
        HEADER
        + """
        def f(batch, obj):
            probe(batch.to("cuda"))
            probe(obj.float())
            probe(obj.weight)
            probe(batch)
        """
    )
    assert all(a.kind is Kind.UNKNOWN for a in answers)


def test_torch_ops_and_non_tensor_functions() -> None:
    answers = probe(
        HEADER
        + """
        x = torch.randn(2, 3)
        probe(torch.cat([x, x], dim=0))
        probe(F.relu(x))
        probe(torch.split(x, 1))
        probe(torch.max(x, dim=1))
        probe(torch.max(x))
        probe(torch.no_grad())
        probe(torch.load("f.pt"))
        probe(x.chunk(2))
        probe(x.max(1))
        probe(x.max())
        """
    )
    kinds = [a.kind for a in answers]
    assert kinds == [
        Kind.TENSOR, Kind.TENSOR, Kind.UNKNOWN, Kind.UNKNOWN, Kind.TENSOR, Kind.UNKNOWN, Kind.UNKNOWN,
        Kind.UNKNOWN, Kind.UNKNOWN, Kind.TENSOR,
    ]
    assert answers[0].device is Device.DEFAULT


def test_devices_and_requires_grad() -> None:
    answers = probe(
        HEADER
        + """
        w = torch.randn(3, requires_grad=True)
        probe(w * 2)
        probe((w * 2).detach())
        probe(nn.Parameter(torch.zeros(3)))
        with torch.no_grad():
            probe(w * 2)
        probe(w.device)
        probe(torch.device("cuda"))
        probe("cuda:0")
        """
    )
    assert answers[0].requires_grad and not answers[1].requires_grad
    assert answers[2].requires_grad
    assert not answers[3].requires_grad
    assert [a.kind for a in answers[4:]] == [Kind.DEVICE] * 3


def test_default_device_changed_or_device_context() -> None:
    changed = one(HEADER + "torch.set_default_device('cuda')\nprobe(torch.zeros(3))\n")
    assert changed.device is Device.UNKNOWN and changed.kind is Kind.TENSOR
    inside = one(HEADER + "with torch.device('cuda'):\n    probe(torch.zeros(3))\n")
    assert inside.device is Device.UNKNOWN


def test_loops_forget_values_assigned_in_the_body() -> None:
    answers = probe(
        HEADER
        + """
        x = torch.zeros(3)
        for i in range(3):
            probe(x)
            x = x.cuda()
        """
    )
    assert answers[0].kind is Kind.UNKNOWN


def test_answers_are_memoized_per_node() -> None:
    source = HEADER + "x = torch.zeros(3)\ny = x + 1\nprobe(y)\nprobe(y)\n"
    first, second = probe(source)
    assert first == second


def test_calling_a_torch_loss_module_gives_a_tensor() -> None:
    answers = probe(
        HEADER
        + """
        criterion = nn.CrossEntropyLoss()
        def step(out, y):
            probe(criterion(out, y))
        probe(criterion(out, y).item())
        layer = nn.LSTM(2, 2)
        probe(layer(x))
        helper = make_loss()
        probe(helper(out, y))
        """
    )
    assert [a.kind for a in answers] == [Kind.TENSOR, Kind.NUMBER, Kind.UNKNOWN, Kind.UNKNOWN]
