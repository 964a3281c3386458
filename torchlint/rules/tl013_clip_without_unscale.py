from __future__ import annotations

import libcst as cst

from torchlint.analysis.loops import Kind
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class ClipWithoutUnscale(Rule):
    """
    ## What it does
    Flags `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` that runs after
    `scaler.scale(loss).backward()` with no `scaler.unscale_(optimizer)` before it, in one
    iteration of a training loop (or one call of a training-step function).

    ## Why is this bad?
    With a `GradScaler` the gradients hold `loss * scale` (often 65536 or more) until they are
    unscaled. Clipping them to `max_norm` clips the scaled values: the threshold is effectively
    divided by the scale factor, so nearly every step is clipped far harder than intended, and the
    clipping changes whenever the scale does.

    ## Example
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead
    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```
    """

    code = "TL013"
    name = "clip-without-unscale"
    summary = "Gradient clipping on GradScaler-scaled gradients: call scaler.unscale_(optimizer) first"
    severity = Severity.WARNING

    def leave_Module(self, node: cst.Module) -> None:
        for sequence in self.ctx.loops.step_sequences():
            events = sequence.events
            for position, clip in enumerate(events):
                if clip.kind is not Kind.CLIP:
                    continue
                earlier = events[:position]
                if any(event.kind is Kind.SCALER_UNSCALE for event in earlier):
                    continue
                scaled = [e for e in earlier if e.kind is Kind.BACKWARD and e.scaled and not e.exclusive_with(clip)]
                if not scaled:
                    continue
                scaler = scaled[-1].node.func.value.func.value  # `scaler` of scaler.scale(loss).backward()
                step = next((e for e in events[position + 1:] if e.kind is Kind.OPTIMIZER_STEP and e.target), None)
                optimizer = self.ctx.code_for(step.target) if step is not None else "optimizer"
                self.report(
                    clip.node,
                    "gradient clipping after `scaler.scale(loss).backward()` clips the scaled gradients; "
                    f"call `{self.ctx.code_for(scaler)}.unscale_({optimizer})` before clipping",
                )
