"""Run an analysis over a snippet and capture what it answers at chosen points of the walk."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports
from torchlint.walker import Walker


def context_for(source: str, path: str = "snippet.py") -> FileContext:
    source = textwrap.dedent(source)
    ctx = FileContext(path, source, cst.parse_module(source), Settings(rules=()))
    _collect_top_level_imports(ctx)
    return ctx


class _Probe:
    """Calls `on_call(ctx, node)` for every call of a function named `probe`."""

    def __init__(self, ctx: FileContext, on_call) -> None:
        self._ctx = ctx
        self._on_call = on_call

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self._on_call(self._ctx, node)


def walk_with_probe(source: str, on_call, path: str = "snippet.py") -> FileContext:
    ctx = context_for(source, path)
    Walker([ctx.values, _Probe(ctx, on_call)], ctx.ancestors).walk(ctx.module)
    return ctx
