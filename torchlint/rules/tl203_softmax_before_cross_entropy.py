from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_api import CROSS_ENTROPY_LOSSES, NLL_LOSSES, SOFTMAX_FUNCTIONS, loss_of_produced_input
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class SoftmaxBeforeCrossEntropy(Rule):
    """
    ## What it does
    Flags `cross_entropy` / `CrossEntropyLoss` and `nll_loss` / `NLLLoss` whose input is the
    output of a `softmax`, written inline or passed through a local variable. Loss modules are
    recognised when built inline, held in a local, or assigned once to a `self.` attribute.

    ## Why is this bad?
    `cross_entropy` applies `log_softmax` itself: fed probabilities, it computes
    `log_softmax(softmax(x))`, squashing every input into [0, 1]. The loss barely varies, the
    gradients are tiny and the model trains slowly or not at all, without any error.
    `nll_loss` expects log-probabilities: fed `softmax` output, it optimises the probability
    instead of its log and its value is not a negative log-likelihood.

    ## Example
    ```python
    probs = F.softmax(logits, dim=1)
    loss = F.cross_entropy(probs, target)
    loss = F.nll_loss(F.softmax(logits, dim=1), target)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(logits, target)
    loss = F.nll_loss(F.log_softmax(logits, dim=1), target)
    ```
    """

    code = "TL203"
    name = "softmax-before-cross-entropy"
    summary = "Softmax output fed to cross_entropy / nll_loss, which expect logits / log-probabilities"
    severity = Severity.ERROR

    def visit_Call(self, node: cst.Call) -> None:
        found = loss_of_produced_input(self.ctx, node, SOFTMAX_FUNCTIONS, "softmax")
        if found is None:
            return
        loss = found[0]
        if loss in CROSS_ENTROPY_LOSSES:
            message = (
                "`cross_entropy` applies `log_softmax` itself; pass the logits, not `softmax(...)` "
                "probabilities"
            )
        elif loss in NLL_LOSSES:
            message = "`nll_loss` expects log-probabilities; use `log_softmax(...)` instead of `softmax(...)`"
        else:
            return
        self.report(node, message)
