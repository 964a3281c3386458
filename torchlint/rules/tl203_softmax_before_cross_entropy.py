from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_api import (
    CROSS_ENTROPY_LOSSES, NLL_LOSSES, SOFTMAX_FUNCTIONS, loss_of_produced_input, taken_here,
)
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class SoftmaxBeforeCrossEntropy(Rule):
    """
    ## What it does
    Flags `cross_entropy` / `CrossEntropyLoss` and `nll_loss` / `NLLLoss` whose input is the
    output of a `softmax`, written inline or passed through a local variable, or a tensor that
    holds softmax output made out of sight: the output of a Module class whose `forward`
    returns a softmax on every path (`F.softmax`, `nn.Softmax`, `exp` of a `log_softmax`; a class
    of another project file too, also as the `model` that every caller of a function passes),
    or what a helper or a method of this file returns, also unpacked from a tuple
    or indexed (`_, probs = net.act(obs)`), or a row of it in a loop (`for row in probs:`). A
    forward that returns probabilities only in eval mode (`if not self.training:`) is not taken
    for one. Loss modules are recognised when built inline, held in a local, assigned to a
    `self.` attribute (once, or with the same class on every path), or given as a constructor
    parameter's default (`def __init__(self, loss=nn.CrossEntropyLoss())`).

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
        found = loss_of_produced_input(self.ctx, node, SOFTMAX_FUNCTIONS, "softmax", CROSS_ENTROPY_LOSSES | NLL_LOSSES)
        if found is None:
            return
        loss, producer, written = found
        # Out of sight: a model, helper or method of this file returned the probabilities.
        made = "" if producer is not None else f"`{self.ctx.code_for(written)}` holds `softmax` output made elsewhere; "
        if loss in CROSS_ENTROPY_LOSSES:
            message = (
                f"`cross_entropy` applies `log_softmax` itself; {made}pass the logits, not `softmax(...)` "
                "probabilities"
            )
        elif loss in NLL_LOSSES:
            message = f"`nll_loss` expects log-probabilities; {made}use `log_softmax(...)` instead of `softmax(...)`"
        else:
            return
        self.report(node, message, related=() if producer is not None else taken_here(self.ctx, written, "softmax"))
