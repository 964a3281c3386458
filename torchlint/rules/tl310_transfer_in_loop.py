from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.dataflow import assigned_names, bound_by_comprehension, target_names
from torchlint.analysis.loops import enclosing_loops
from torchlint.analysis.names import method_name, method_receiver, suite_statements
from torchlint.analysis.tensor_facts.domain import Device
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule

_MOVES = frozenset({"to", "cuda"})


class TransferInLoop(Rule):
    """
    ## What it does
    Flags `.to(device)` or `.cuda()` of a tensor made on the CPU before a loop, inside the loop,
    when the loop neither reassigns nor changes it in place: the same host-to-device copy runs
    every iteration. A note: the code is correct. Tensors the loop changes (`mask[i] = 0`,
    `buffer.add_(...)`), the loop's own variables (and those of a comprehension in it) and tensors
    whose device is not known are left alone.

    ## Why is this bad?
    Each copy allocates device memory and waits for the transfer (from pageable host memory the
    host blocks), once per iteration, for a value that never changes. Moved once before the loop,
    it costs one copy.

    ## Example
    ```python
    class_weights = torch.tensor([1.0, 5.0])
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=class_weights.to(device))
    ```

    ## Use instead
    ```python
    class_weights = torch.tensor([1.0, 5.0], device=device)
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=class_weights)
    ```
    """

    code = "TL310"
    name = "transfer-in-loop"
    summary = "The same host-to-device copy of an unchanged tensor runs every iteration of a loop"
    severity = Severity.NOTE

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) not in _MOVES:
            return
        moved = method_receiver(node)
        if not isinstance(moved, cst.Name):
            return
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops or bound_by_comprehension(self.ctx.ancestors, moved.value):
            return
        facts = self.ctx.tensors.facts(moved)
        if getattr(facts, "device", None) not in (Device.CPU, Device.DEFAULT) or getattr(facts, "loaded", False):
            return
        if not self._unchanged_in(loops[0], moved.value):
            return
        origin = getattr(facts, "origin", None)
        self.report(
            node,
            f"`{moved.value}` does not change in this loop, yet it is copied to the device every iteration; "
            "move it once before the loop",
            related=(RelatedNode(origin, "made on the CPU here"),) if isinstance(origin, cst.CSTNode) else (),
        )

    def _unchanged_in(self, loop: cst.For | cst.While, name: str) -> bool:
        """The loop neither assigns `name` nor changes it in place."""
        if isinstance(loop, cst.For) and name in target_names(loop.target):
            return False
        if name in assigned_names(suite_statements(loop.body)):
            return False
        body = self.ctx.code_for(loop.body)
        escaped = re.escape(name)
        changed = re.compile(rf"\b{escaped}\s*\[[^\]]*\]\s*[-+*/]?=|\b{escaped}\.\w+_\(|\bout\s*=\s*{escaped}\b")
        return changed.search(body) is None

