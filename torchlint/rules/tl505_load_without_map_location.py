from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.names import argument
from torchlint.analysis.torch_api import LOAD_FUNCTIONS
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# The file runs without CUDA too: it falls back to the CPU, or lets the user choose the device.
_CPU_FALLBACK = re.compile(
    r"""is_available\(\)\s*(?:\)\s*)?else\s*(?:torch\.device\(\s*)?["']cpu"""
    r"""|["']cpu["']\)?\s*if\s+not\s+[\w.]*is_available\(\)"""
    r"""|["']--(?:cpu|no[-_]cuda|no[-_]gpu|device|use[-_]cuda|cuda|gpu)["']"""
)
# `torch.save(x.cpu(), path)`: what the file saves, it saves from the CPU.
_SAVE = re.compile(r"torch\.save\(([^,\n]*)")
# `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`: the name that holds it.
_DEVICE_NAME = re.compile(r"""^[ \t]*([A-Za-z_][\w.]*)\s*=\s*[^=\n]*is_available\(\)[^\n]*["']cpu""", re.MULTILINE)


def _may_fall_back(source: str) -> bool:
    """Text that every match of `_CPU_FALLBACK` holds: a fast look before the regex, which has no
    literal prefix to skip ahead with and tries every position of the file."""
    return "is_available()" in source or "'--" in source or '"--' in source


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` without `map_location` in a file that is written to run without
    CUDA too: it chooses `"cuda" if torch.cuda.is_available() else "cpu"` (or
    `torch.device(...)` of that), or has a `--cpu` / `--no-cuda` / `--device` / `--gpu` option.
    A call with `**kwargs` (which may carry `map_location`) is not flagged, nor is a file that
    never falls back to the CPU, or one whose every `torch.save` saves `x.cpu()` (the files it
    loads back hold CPU tensors).

    ## Why is this bad?
    `torch.load` puts every tensor back on the device it was saved from. A checkpoint saved
    during GPU training holds CUDA tensors, and on a machine without CUDA (a laptop, a CPU
    inference server, CI) loading it raises `RuntimeError: Attempting to deserialize object on a
    CUDA device but torch.cuda.is_available() is False`: exactly the machines the CPU fallback
    was written for. It also fills GPU 0 first when the script runs on another GPU.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location=device))
    ```

    ## Fix safety
    The fix adds `map_location=NAME`, with the name the file assigns its device to
    (`device = torch.device(...)`). It is unsafe: that name must exist where the load runs
    (a local of another function, or an attribute such as `self.device`, may not). Without such a
    name, no fix is offered; `map_location="cpu"` then `.to(device)` also works.

    Bug left in place: no. Computation changed: no (the tensors land on the chosen device).
    """

    code = "TL505"
    name = "load-without-map-location"
    summary = "torch.load without map_location in code that runs without CUDA: GPU checkpoints fail to load"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._falls_back = "load" in ctx.source and _may_fall_back(ctx.source) and _CPU_FALLBACK.search(
            ctx.source) is not None and not _saves_on_cpu(ctx.source)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._falls_back or self.ctx.callee(node) not in LOAD_FUNCTIONS:
            return
        if argument(node, 1, "map_location") is not None or any(arg.star == "**" for arg in node.args):
            return
        device = _DEVICE_NAME.search(self.ctx.source)
        fix = None
        if device is not None and not any(arg.star for arg in node.args):
            fixed = with_arguments(node, last=[keyword("map_location", device.group(1))])
            fix = FixSpec(f"Add `map_location={device.group(1)}`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
        self.report(
            node,
            "`torch.load` without `map_location` puts tensors back on the GPU they were saved from: on a "
            "machine without CUDA, which this file falls back to, a GPU checkpoint fails to load; pass "
            f"`map_location={device.group(1) if device is not None else 'device'}`",
            fix=fix,
        )


def _saves_on_cpu(source: str) -> bool:
    saved = [match.group(1).strip() for match in _SAVE.finditer(source)]
    return bool(saved) and all(value.endswith(".cpu()") for value in saved)
