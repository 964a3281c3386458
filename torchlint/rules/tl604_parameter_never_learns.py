from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class ParameterNeverLearns(Rule):
    """
    ## What it does
    Reported by `--runtime` only, at the line that built the module:
    - parameters whose gradient stayed `None` or exactly zero at every optimizer step while
      other parameters of the same optimizer learned: a module called in training whose output
      never reaches the loss (a `.detach()` that cuts off an encoder), or a layer defined in
      `__init__` and never called in `forward()`;
    - parameters that receive gradients but are in no optimizer's param groups: the optimizer was
      built from another module, or before a layer was added.

    The module path is named (`encoder.layers.3.fc1.weight`); a whole module that never learns is
    one finding. Parameters frozen on purpose (`requires_grad=False`) and modules called only in
    eval mode (an evaluation head) are not reported.

    ## Why is this bad?
    Nothing fails: the loss still goes down through the parameters that do learn, and the part
    of the model that never trains keeps its random initialisation. Such a model underperforms
    for no visible reason.

    ## Example
    ```python
    def forward(self, x):
        h = self.encoder(x).detach()  # cuts the encoder off from the loss
        return self.head(h)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h = self.encoder(x)
        return self.head(h)
    ```
    """

    code = "TL604"
    name = "parameter-never-learns"
    summary = "Parameters get no gradient at any step, or are in no optimizer"
    severity = Severity.ERROR
    runtime_only = True
