from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import argument
from torchlint.analysis.torch_api import NLL_LOSSES, called_function, taken_here
from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class LogitsIntoNllLoss(Rule):
    """
    ## What it does
    Flags `F.nll_loss` / `nn.NLLLoss` whose input holds raw scores: the output of an `nn.Linear`
    (or `Bilinear`) layer, also through views and indexing, or of a Module class whose `forward`
    returns such a layer's output on every path (a class of this file or of another project file).
    Loss modules are recognised as for TL203 (built inline, held in a local or a `self.`
    attribute). Not flagged: scores that went through `log_softmax` (a function, a method or an
    `nn.LogSoftmax` layer), and inputs whose origin is not known.

    ## Why is this bad?
    `nll_loss` expects log-probabilities and only picks `-input[target]`: it does not normalise.
    Fed raw scores, the loss has no lower bound, so training pushes the target score up without
    limit, the loss goes to minus infinity and training diverges, or it simply optimises the wrong
    objective. Its mirror, `log_softmax` output fed to `cross_entropy`, is harmless
    (`log_softmax` is idempotent) and is not reported.

    ## Example
    ```python
    class Classifier(nn.Module):
        def forward(self, x):
            return self.fc(self.body(x))   # self.fc = nn.Linear(...)

    loss = F.nll_loss(model(x), y)
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(model(x), y)
    # or
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
    ```
    """

    code = "TL210"
    name = "logits-into-nll-loss"
    summary = "Raw scores (a Linear's output) fed to nll_loss, which expects log-probabilities"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # What a call computes is asked only where a NLL loss is named (asking is not free).
        self._names_nll = "nll_loss" in ctx.source or "NLLLoss" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._names_nll:
            return
        written = argument(node, 0, "input") if node.args else None
        if written is None or called_function(self.ctx, node) not in NLL_LOSSES:
            return
        if getattr(self.ctx.tensors.facts(written), "activation", None) != "logits":
            return
        scores = self.ctx.code_for(written)
        self.report(
            node,
            f"`nll_loss` expects log-probabilities, but `{scores}` holds raw scores (a `Linear`'s output): the loss "
            f"has no lower bound and training diverges; use `cross_entropy({scores}, ...)` or `log_softmax` first",
            related=taken_here(self.ctx, written, "logits", "the raw scores are made here"),
        )
