"""Statement-local positions must equal libcst's PositionProvider for every node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint.positions import StatementPositions
from torchlint.walker import Walker

TRICKY = '''\
"""Module docstring."""
import torch; import torch.nn as nn
# a comment


@decorator(1)
# between decorators
@other
def train(model, *, steps=3) -> None:
    x = torch.zeros(3); y = x.view(3)
    if x: z = x.t()
    elif y:
        z = (x
             .permute(0)
             .view(1))
    else:
        z = [v.item()
             for v in x]
    for i in range(steps):
        pass
    else:
        w = i.cpu()
    try:
        a = torch.load("f")
    except (ImportError, ValueError) as error:
        b = error.args[0].cuda()
    else:
        c = x.to("cuda")
    finally:
        d = x.numpy()
    while True:
        break
    with torch.no_grad(), open("f") as handle:
        e = model(x)
    async def inner():
        async for q in aiter():
            await q.step()
        async with lock:
            r = s.log()
    return """multi
line""".format(torch.tensor(1))


class Net(nn.Module):
\tdef forward(self, x):
\t\treturn x.softmax(-1).log()


if __name__ == "__main__":
    train(Net())  # trailing
'''


class _Everything:
    """Records every node with its ancestors at visit time."""

    def __init__(self, ancestors: list) -> None:
        self.ancestors = ancestors
        self.seen: list[tuple[cst.CSTNode, tuple]] = []

    def on(self, node: cst.CSTNode) -> None:
        self.seen.append((node, tuple(self.ancestors)))


def _assert_same_positions(source: str) -> int:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ancestors: list = []
    kinds = (cst.Call, cst.Attribute, cst.Name, cst.Assign, cst.SimpleStatementLine, cst.For, cst.If,
             cst.Subscript, cst.BinaryOperation, cst.Arg, cst.Decorator, cst.FunctionDef, cst.With)
    recorder_class = type("Recorder", (_Everything,), {f"visit_{kind.__name__}": _Everything.on for kind in kinds})
    recorder = recorder_class(ancestors)
    Walker([recorder], ancestors).walk(module)
    for node, chain in recorder.seen:
        positions = StatementPositions(module, source)
        assert positions.range_of(node, chain) == expected[node], module.code_for_node(node)
        # The point: only the statement is regenerated, never the whole file (the first
        # decorator is copied to drop its leading lines, so it alone takes the slow path).
        assert not positions._whole_file or isinstance(node, cst.Decorator), module.code_for_node(node)
    return len(recorder.seen)


def test_tricky_syntax():
    assert _assert_same_positions(TRICKY) > 150


def test_crlf_line_endings():
    _assert_same_positions(TRICKY.replace("\n", "\r\n"))


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parent / "fixtures" / "rules").glob("*.py")), ids=lambda p: p.name
)
def test_rule_fixtures(path):
    _assert_same_positions(path.read_text(encoding="utf-8"))


def test_a_walk_reporting_progress_visits_the_same_nodes_in_the_same_order():
    module = cst.parse_module(TRICKY)
    kinds = (cst.Module, cst.Call, cst.Name, cst.FunctionDef, cst.SimpleStatementLine)
    recorder_class = type("Recorder", (_Everything,), {f"visit_{kind.__name__}": _Everything.on for kind in kinds})
    walks = []
    fractions: list[float] = []
    for progress in (None, fractions.append):
        ancestors: list = []
        recorder = recorder_class(ancestors)
        Walker([recorder], ancestors).walk(module, progress)
        walks.append(recorder.seen)
    assert walks[0] == walks[1]
    assert fractions == [done / len(module.body) for done in range(len(module.body))]
