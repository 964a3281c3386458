"""Tensors known from how the code treats them (`analysis/tensor_evidence.py`) and module values
(`analysis/module_values.py`), asked at a `probe(expr)` call of a snippet."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.analysis.module_values import holds_module
from torchlint.analysis.tensor_evidence import TensorEvidence, places_on_accelerator
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports, _ImportCollector
from torchlint.walker import Walker

HEADER = "import torch\nimport torch.nn as nn\nimport timm\nfrom torchvision import models\n"


def _answers(source: str, question) -> list:
    source = HEADER + textwrap.dedent(source)
    ctx = FileContext("t.py", source, cst.parse_module(source), Settings(rules=()))
    _collect_top_level_imports(ctx)
    answers = []

    class Probe:
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "probe":
                answers.append(question(ctx, node.args[0].value))

    Walker([_ImportCollector(ctx), ctx.values, Probe()], ctx.ancestors).walk(ctx.module)
    return answers


def on_device(source: str, known: frozenset[str] = frozenset()) -> list[bool]:
    evidence: dict[int, TensorEvidence] = {}

    def ask(ctx, expr):
        found = evidence.setdefault(id(ctx), TensorEvidence(ctx))
        return found.on_device(expr, known)

    return _answers(source, ask)


def test_outputs_of_modules_and_losses_and_what_is_computed_from_them() -> None:
    assert on_device(
        """
        def train(model, loader, criterion, device):
            for data, target in loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                loss = criterion(output, target)
                probe(loss)
                probe(output.argmax(1).eq(target).sum())
                _, predicted = torch.max(output.data, 1)
                probe((predicted == target).float().mean())
                probe(target)
        """
    ) == [True, True, True, True]


def test_cpu_values_numbers_and_unknowns_are_not() -> None:
    assert on_device(
        """
        def f(batch, history, args):
            probe(torch.zeros(3))
            probe(batch.cpu())
            probe(len(history))
            probe(args.lr)
            probe(history[-1])
            probe(batch.shape[0])
        """
    ) == [False, False, False, False, False, False]


def test_known_names_are_tensors() -> None:
    assert on_device("probe(outputs.loss)\nprobe(outputs.logits)\n", frozenset({"outputs.loss"})) == [True, False]


@pytest.mark.parametrize(
    "source, placed",
    [
        ("model.cuda()", True),
        ("x = x.to(device)", True),
        ("torch.zeros(3, device=dev)", True),
        ("model = accelerator.prepare(model)", True),
        ("model = nn.DataParallel(model)", True),
        ("x = x.to('mps')", True),
        ("model.to(torch.float64)", False),
        ("x = x.to(dtype)", False),
        ("x = x.double()", False),
    ],
)
def test_placement_in_the_file(source: str, placed: bool) -> None:
    assert places_on_accelerator(source) is placed


def test_modules_from_constructors_builders_attributes_and_names() -> None:
    answers = _answers(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(2, 2)
                self.thing = object()

            def forward(self, x):
                probe(self.proj)
                probe(self.thing)
                return x


        def build():
            net = Net()
            return net.to("cuda")


        m1 = build()
        m2 = models.resnet18(weights=None).eval()
        m3 = timm.create_model("vit_base_patch16_224")
        probe(m1)
        probe(m2)
        probe(m3)
        probe(netD)
        probe(pipe)
        """,
        holds_module,
    )
    assert answers == [True, False, True, True, True, True, False]
