from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name
from torchlint.analysis.values import Device
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule


class NumpyWithoutCpuDetach(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor known to be on an accelerator (moved with `.cuda()` /
    `.to(device)`, created with `device=`) or known to require grad (`requires_grad=True`,
    `nn.Parameter`), with no `.cpu()` / `.detach()` on the way.

    Tensors moved back to the CPU earlier (also through local variables) and tensors whose device
    or grad state is unknown are not reported.

    ## Why is this bad?
    `.numpy()` shares memory with the tensor, so it only works for CPU tensors outside autograd:
    `TypeError: can't convert cuda:0 device type tensor to numpy` on an accelerator, and
    `RuntimeError: Can't call numpy() on Tensor that requires grad` for a tensor in the graph.
    Code that works in a CPU test crashes on the GPU.

    ## Example
    ```python
    scores = model_scores.to(device)
    array = scores.numpy()
    ```

    ## Use instead
    ```python
    array = scores.detach().cpu().numpy()
    ```

    ## Fix safety
    The fix inserts the missing `.cpu()` and/or `.detach()` before `.numpy()`. It is safe: the
    values are the same and the code no longer raises.

    Bug left in place: no. Computation changed: no. The array of an accelerator tensor is a copy
    (the old line raised); for a CPU tensor `.detach().numpy()` still shares its memory, as the old
    `.numpy()` would have.
    """

    code = "TL303"
    name = "numpy-without-cpu-detach"
    summary = "`.numpy()` on an accelerator tensor or one that requires grad: call `.detach().cpu()` first"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "numpy" or node.args:
            return
        receiver = func.value
        if self.ctx.callee(node) is not None:
            return  # `np.numpy`, module attributes
        info = self.ctx.kinds.info(receiver)
        if not info.tensor_like:
            return
        on_accelerator = info.device is Device.ACCELERATOR
        needs_detach = info.requires_grad and info.is_tensor
        if not on_accelerator and not needs_detach:
            return
        missing = ".detach().cpu()" if on_accelerator and needs_detach else (".cpu()" if on_accelerator else ".detach()")
        written = dotted_name(receiver)
        subject = f"`{written}`" if written else "the tensor"
        reason = (
            "is on the accelerator and requires grad" if on_accelerator and needs_detach
            else ("is on the accelerator" if on_accelerator else "requires grad")
        )
        self.report(
            node,
            f"`.numpy()` fails because {subject} {reason}; use `{written or 'x'}{missing}.numpy()`",
            fix=FixSpec(f"Insert `{missing}` before `.numpy()`", ((func.attr, f"{missing[1:]}.numpy"),), Applicability.SAFE),
        )
