from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.walker import Walker


def gated(source: str) -> dict[str, bool]:
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("t.py", module.code, module, Settings(rules=()))
    seen: dict[str, bool] = {}

    class Probe:
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "probe":
                seen[node.args[0].value.evaluated_value] = ctx.guards.in_version_gate(node)  # type: ignore[union-attr]

    Walker([Probe()], ctx.ancestors).walk(module)
    return seen


def test_version_gated_branches_and_type_checking() -> None:
    seen = gated(
        """
        from typing import TYPE_CHECKING
        import torch
        if TYPE_CHECKING:
            probe("type checking")
        if is_torch_greater_or_equal("2.4"):
            probe("new torch")
        else:
            probe("old torch")
        if version.parse(torch.__version__) < version.parse("1.6"):
            probe("parsed version")
        x = probe("ifexp") if hasattr(torch, "compile") else None
        if training:
            probe("plain if")
        probe("top level")
        """
    )
    assert seen == {
        "type checking": True, "new torch": True, "old torch": True, "parsed version": True,
        "ifexp": True, "plain if": False, "top level": False,
    }
