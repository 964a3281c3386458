"""Grad mode at points of the walk: each `probe("label")` call records the state where it stands."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.grad_mode import GradState
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports
from torchlint.walker import Walker


class _Probe:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.seen: dict[str, GradState] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            label = node.args[0].value.evaluated_value  # type: ignore[union-attr]
            self.seen[label] = self.ctx.grad_mode.state()


def states(source: str) -> dict[str, GradState]:
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("t.py", module.code, module, Settings(rules=()))
    _collect_top_level_imports(ctx)
    probe = _Probe(ctx)
    Walker([ctx.values, probe], ctx.ancestors).walk(module)
    return probe.seen


D, E, DEF, U = GradState.DISABLED, GradState.ENABLED, GradState.DEFAULT, GradState.UNKNOWN


def test_with_blocks_switch_grad_mode_and_the_innermost_wins() -> None:
    seen = states(
        """
        import torch
        probe("module")
        with torch.no_grad():
            probe("no_grad")
            with torch.enable_grad():
                probe("re-enabled")
            probe("back in no_grad")
        probe("after")
        with torch.inference_mode():
            probe("inference")
        with torch.set_grad_enabled(False):
            probe("set false")
        with torch.set_grad_enabled(mode=True):
            probe("set true")
        with torch.set_grad_enabled(phase == "train"):
            probe("set variable")
        with torch.inference_mode(False):
            probe("inference off")
        """
    )
    assert seen == {
        "module": DEF, "no_grad": D, "re-enabled": E, "back in no_grad": D, "after": DEF,
        "inference": D, "set false": D, "set true": E, "set variable": U, "inference off": E,
    }


def test_aliases_and_several_items() -> None:
    seen = states(
        """
        from torch import no_grad as ng
        import torch.autograd as ag
        import torch as T
        with open("f") as f, ng():
            probe("aliased")
        with ag.no_grad():
            probe("autograd module")
        with T.autocast("cuda"):
            probe("autocast only")
        with T.no_grad(), T.enable_grad():
            probe("last item wins")
        with nullcontext() if training else T.no_grad():
            probe("conditional")
        with self.maybe_no_grad():
            probe("helper")
        """
    )
    assert seen == {
        "aliased": D, "autograd module": D, "autocast only": DEF, "last item wins": E,
        "conditional": U, "helper": U,
    }


def test_decorated_functions() -> None:
    seen = states(
        """
        import torch

        @torch.no_grad()
        def evaluate(model):
            probe("decorated")
            with torch.enable_grad():
                probe("enabled inside")

        @torch.inference_mode
        def predict(x):
            probe("bare decorator")

        @staticmethod
        def plain(x):
            probe("plain")

        @torch.enable_grad()
        def saliency(x):
            probe("enable decorator")
        """
    )
    assert seen == {
        "decorated": D, "enabled inside": E, "bare decorator": D, "plain": DEF, "enable decorator": E,
    }


def test_function_bodies_do_not_inherit_the_mode_where_they_are_defined() -> None:
    seen = states(
        """
        import torch
        with torch.no_grad():
            def helper():
                probe("nested def")
            callback = lambda: probe("lambda")
            @decorate(probe("decorator expression"))
            def other():
                pass
        """
    )
    assert seen == {"nested def": DEF, "lambda": DEF, "decorator expression": D}


def test_with_items_are_evaluated_before_the_block_is_entered() -> None:
    seen = states(
        """
        import torch
        with torch.no_grad(probe("item")):
            pass
        """
    )
    assert seen == {"item": DEF}


def test_is_disabled() -> None:
    module = cst.parse_module("import torch\nwith torch.no_grad():\n    x = 1\n")
    ctx = FileContext("t.py", module.code, module, Settings(rules=()))
    _collect_top_level_imports(ctx)
    answers = []

    class Ask:
        def visit_Assign(self, node: cst.Assign) -> None:
            answers.append(ctx.grad_mode.is_disabled())

        def visit_Import(self, node: cst.Import) -> None:
            answers.append(ctx.grad_mode.is_disabled())

    Walker([Ask()], ctx.ancestors).walk(module)
    assert answers == [False, True]
