from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import Loop, element_source, enclosing_loops, throttled_since
from torchlint.analysis.names import positional_args
from torchlint.analysis.values import Device
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_SYNC_METHODS = frozenset({"item", "tolist", "cpu", "numpy"})
_SYNC_BUILTINS = frozenset({"float", "int", "bool"})
# Calls that only record or show a value: a sync feeding them every step is avoidable.
_SINKS = frozenset(
    {"print", "append", "extend", "update", "add", "log", "log_dict", "log_metrics", "info", "debug",
     "warning", "write", "add_scalar", "add_scalars", "add_histogram", "set_postfix", "set_postfix_str",
     "set_description", "format", "record", "put"}
)
# Wrappers the value passes through on its way to the consumer.
_TRANSPARENT_CALLS = frozenset({"round", "float", "int", "abs", "str", "dict", "detach", "item", "tolist", "numpy", "cpu"})
_TRANSPARENT = (
    cst.BinaryOperation, cst.UnaryOperation, cst.FormattedStringExpression, cst.FormattedString,
    cst.Element, cst.List, cst.Tuple, cst.DictElement, cst.Dict, cst.Arg,
)

_ELEMENT_LOOP = "loop over tensor elements"
_CONTAINERS = (cst.Dict, cst.List, cst.FormattedString)


class SyncInLoop(Rule):
    """
    ## What it does
    Flags `.item()`, `.tolist()`, `.cpu()`, `.numpy()` and `float(t)` / `int(t)` / `bool(t)` on a
    value known to be a tensor, inside a training-step loop (one that calls `backward()` or an
    optimizer `step()`) or a loop over the elements of a tensor, when the result is only
    accumulated, stored or logged. Tensors known to be on the CPU, syncs under a throttle (`if step % log_every == 0:`), after the
    loop, on Python numbers, or whose value Python needs every step (`env.step(action.item())`,
    `if loss.item() > limit:`) are not reported.

    ## Why is this bad?
    Each of these copies a value from the accelerator to the host and blocks the CPU until every
    queued kernel has finished. Once per step it stops the CPU from running ahead to queue the next
    step's work, so the GPU idles between steps; per element it serialises the whole loop.

    ## Example
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running_loss += loss.item()
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        ...
        running_loss += loss.detach()
        if step % log_every == 0:
            print(running_loss.item() / (step + 1))
    ```
    """

    code = "TL302"
    name = "sync-in-loop"
    summary = "Host-device sync (.item(), .cpu(), float(t)...) every iteration of a training or per-element loop"
    severity = Severity.WARNING

    def visit_Call(self, node: cst.Call) -> None:
        operand = self._synced_operand(node)
        if operand is None:
            return
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops:
            return
        loop = loops[0]
        kind = self._loop_kind(loop)
        if kind is None or throttled_since(self.ctx.ancestors, loop):
            return
        if not self._is_tensor(operand, loop, kind) or not self._only_recorded(node):
            return
        shown = f"{node.func.value}(...)" if isinstance(node.func, cst.Name) else f".{node.func.attr.value}()"
        self.report(
            node,
            f"`{shown}` synchronises with the device on every iteration of this {kind}; accumulate on the "
            "device (`.detach()`) and read the value once after the loop or every N steps",
        )

    def _synced_operand(self, call: cst.Call) -> cst.BaseExpression | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            if func.attr.value not in _SYNC_METHODS or call.args:
                return None
            receiver = func.value
            # Report a chain once, at its first sync: `x.cpu().numpy()` is one copy.
            inner = receiver
            while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
                if inner.func.attr.value in _SYNC_METHODS:
                    return None
                inner = inner.func.value
            return receiver
        if isinstance(func, cst.Name) and func.value in _SYNC_BUILTINS and len(call.args) == 1:
            positional = positional_args(call)
            return positional[0].value if positional else None
        return None

    def _is_tensor(self, operand: cst.BaseExpression, loop: Loop, kind: str) -> bool:
        """A tensor that may live on an accelerator (reading a CPU tensor costs no sync)."""
        info = self.ctx.kinds.info(operand)
        if info.is_tensor:
            return info.device not in (Device.DEFAULT, Device.CPU)
        if kind != _ELEMENT_LOOP or not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
            return False
        # `for row in t: row.sum().item()`: the elements of a tensor are tensors.
        root = operand
        while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
            root = root.func.value
        while isinstance(root, cst.Subscript):
            root = root.value
        return isinstance(root, cst.Name) and root.value == loop.target.value and isinstance(loop.iter, (cst.Name, cst.Attribute))

    def _loop_kind(self, loop: Loop) -> str | None:
        if self.ctx.loops.is_training_loop(loop):
            return "training loop"
        source = element_source(loop)
        if source is not None and self.ctx.kinds.is_tensor(source):
            return _ELEMENT_LOOP
        return None

    def _only_recorded(self, call: cst.Call) -> bool:
        """The synced value is only accumulated, stored or logged (not needed by Python right now)."""
        ancestors = self.ctx.ancestors
        child: cst.CSTNode = call
        contained = False  # passed through a dict, list or f-string
        for index in range(len(ancestors) - 1, -1, -1):
            parent = ancestors[index]
            if isinstance(parent, cst.Attribute) and parent.value is child:
                # `x.cpu().numpy()`, `loss.detach().item()`: continue from the outer call.
                outer = ancestors[index - 1] if index else None
                if isinstance(outer, cst.Call) and outer.func is parent and parent.attr.value in _TRANSPARENT_CALLS:
                    child = outer
                    continue
                return False
            if isinstance(parent, _TRANSPARENT):
                contained = contained or isinstance(parent, _CONTAINERS)
                child = parent
                continue
            if isinstance(parent, cst.Call):
                callee = parent.func
                name = callee.attr.value if isinstance(callee, cst.Attribute) else (
                    callee.value if isinstance(callee, cst.Name) else None
                )
                if name in _SINKS:
                    return True
                if name in _TRANSPARENT_CALLS:
                    child = parent
                    continue
                return False
            if isinstance(parent, cst.AugAssign):
                return parent.value is child
            if isinstance(parent, (cst.Assign, cst.AnnAssign)):
                # A container (`logs = {"loss": loss.item()}`) or a stored attribute/item is a record;
                # a plain name may feed anything later: stay quiet.
                if child is not parent.value:
                    return False
                targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
                return contained or any(isinstance(t, (cst.Subscript, cst.Attribute)) for t in targets)
            return False
        return False
