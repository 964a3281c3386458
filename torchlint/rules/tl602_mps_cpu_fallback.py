from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class MpsCpuFallback(Rule):
    """
    ## What it does
    Reported by `--runtime` only, on Apple-silicon (MPS) machines: an operator had no MPS kernel
    and ran on the CPU instead (PyTorch's "is not currently supported on the MPS backend and will
    fall back to run on the CPU" warning, with `PYTORCH_ENABLE_MPS_FALLBACK=1`).

    ## Why is this bad?
    Each fallback copies the operands to the CPU and the result back, and synchronises: inside a
    training step it can cost more than the rest of the step. The warning is emitted once, so a
    slow loop gives no further hint.

    ## Example
    ```python
    # PYTORCH_ENABLE_MPS_FALLBACK=1
    x = torch.randn(1024, device="mps")
    y = some_op_without_an_mps_kernel(x)  # runs on the CPU every step
    ```

    ## Use instead
    ```python
    # An equivalent supported op, or do that part on the CPU once, outside the loop.
    ```
    """

    code = "TL602"
    name = "mps-cpu-fallback"
    summary = "An operator fell back from MPS to the CPU"
    severity = Severity.WARNING
    runtime_only = True
