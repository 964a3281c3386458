from __future__ import annotations

import re

import libcst as cst

from torchlint.diagnostics import Severity
from torchlint.rule import Rule

# Point-to-point operations that return a request to wait on.
_ASYNC_P2P = frozenset({"torch.distributed.isend", "torch.distributed.irecv", "torch.distributed.batch_isend_irecv"})


class UnwaitedP2pRequest(Rule):
    """
    ## What it does
    Flags `dist.isend(...)`, `dist.irecv(...)` and `dist.batch_isend_irecv(...)` whose request is
    dropped: the call is a statement of its own, or its result is assigned to a name that the
    rest of the function (or module) never mentions again, so nothing calls `.wait()` on it.
    A request kept in any way (waited on, appended to a list, returned, passed on) is not flagged.

    ## Why is this bad?
    The non-blocking operations return before the data has moved. Until `req.wait()` returns,
    a received tensor may not hold the data yet, and a sent tensor must not be changed or freed:
    reading or reusing it races with the transfer. The result is silently wrong values on some
    ranks, or a hang when a rank exits with a transfer still pending.

    ## Example
    ```python
    if rank == 0:
        dist.isend(tensor, dst=1)
    else:
        dist.irecv(tensor, src=0)
    print(tensor)
    ```

    ## Use instead
    ```python
    if rank == 0:
        request = dist.isend(tensor, dst=1)
    else:
        request = dist.irecv(tensor, src=0)
    request.wait()
    print(tensor)
    ```
    """

    code = "TL308"
    name = "unwaited-p2p-request"
    summary = "dist.isend/irecv request never waited on: the tensor is used before the transfer completes"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._may_call = "isend" in ctx.source or "irecv" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._may_call or self.ctx.callee(node) not in _ASYNC_P2P:
            return
        parent = self.ctx.parent
        function = self.ctx.callee(node).rsplit(".", 1)[-1]
        if isinstance(parent, cst.Expr):
            self.report(node, f"the request `{function}` returns is dropped: nothing waits for the transfer; keep it "
                              "and call `.wait()` before using or changing the tensor")
            return
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            name = parent.targets[0].target.value
            if not self._mentioned_after(parent, name):
                self.report(node, f"`{name}`, the request `{function}` returns, is never waited on; call `{name}.wait()` "
                                  "before using or changing the tensor")

    def _mentioned_after(self, assignment: cst.Assign, name: str) -> bool:
        """The name appears in the enclosing function (or module) other than in this assignment."""
        scope = self.ctx.enclosing_function() or self.ctx.module
        mention = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        return len(mention.findall(self.ctx.module.code_for_node(scope))) > 1
