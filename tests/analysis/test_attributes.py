"""`ctx.self_attributes.value_of(self.x)`: what a class assigned to one of its attributes."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.walker import Walker


class _Probe:
    """Records, for each `probe(self.x)`, the source of what `self.x` holds (or None)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.answers: list[str | None] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            value = self.ctx.self_attributes.value_of(node.args[0].value)
            self.answers.append(None if value is None else self.ctx.code_for(value))


def answers(source: str) -> list[str | None]:
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    ctx = FileContext("t.py", source, module, Settings(rules=()))
    probe = _Probe(ctx)
    Walker([ctx.values, probe], ctx.ancestors).walk(module)
    return probe.answers


def test_attribute_assigned_once_in_init() -> None:
    source = """
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.criterion = nn.CrossEntropyLoss()
            if cfg.smooth:
                self.head = nn.Linear(2, 2)

        def forward(this, x):
            probe(this.criterion)
            probe(this.head)
            probe(this.missing)
    """
    assert answers(source) == ["nn.CrossEntropyLoss()", "nn.Linear(2, 2)", None]


def test_ambiguous_assignments_are_unknown() -> None:
    source = """
    class Model:
        def __init__(self, kl):
            if kl:
                self.loss = nn.KLDivLoss()
            else:
                self.loss = nn.CrossEntropyLoss()
            self.a, self.b = make()
            self.count = 0

        def step(self):
            self.count += 1
            probe(self.loss)
            probe(self.a)
            probe(self.count)
    """
    assert answers(source) == [None, None, None]


def test_only_self_of_the_enclosing_method() -> None:
    source = """
    class Model:
        def __init__(self):
            self.loss = nn.BCELoss()

        def forward(self, other):
            probe(other.loss)
            def inner(self):
                probe(self.loss)
            probe(self.loss)

    def free(self):
        probe(self.loss)
    """
    assert answers(source) == [None, None, "nn.BCELoss()", None]


def test_one_line_bodies_and_other_methods() -> None:
    source = """
    class Model:
        def setup(self):
            if True: self.loss = nn.NLLLoss()
        def loss_of(self, x):
            with ctx():
                probe(self.loss)
    """
    assert answers(source) == ["nn.NLLLoss()"]
