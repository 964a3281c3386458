from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import argument, dotted_name, suite_statements
from torchlint.analysis.torch_api import CROSS_ENTROPY_LOSSES, NLL_LOSSES, called_function
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule

# Element-wise dropouts: they zero single class scores (`Dropout2d` drops feature maps).
_DROPOUT_FUNCTIONS = frozenset({"torch.nn.functional.dropout", "torch.dropout", "torch.nn.functional.alpha_dropout"})
_DROPOUT_LAYERS = frozenset({"torch.nn.Dropout", "torch.nn.AlphaDropout"})
_SCORE_LOSSES = CROSS_ENTROPY_LOSSES | NLL_LOSSES | frozenset({
    "torch.nn.functional.binary_cross_entropy_with_logits", "torch.nn.BCEWithLogitsLoss",
})
# A Linear whose outputs are class scores: its size names the classes, or the layer is a head.
_CLASS_COUNT = re.compile(r"(num|n|nb)_?(classes|class|labels|label|tokens|categories)|classes|vocab(_size)?|ntokens?", re.I)
_HEAD_NAME = re.compile(r"(classifier|cls|head|logits?|fc_out|output_layer)$", re.I)


class DropoutOnLogits(Rule):
    """
    ## What it does
    Flags an element-wise dropout (`nn.Dropout`, `F.dropout`) applied to class scores: to the
    output of the last `nn.Linear` that `forward` returns, when that layer makes the scores (its
    size names the classes, `nn.Linear(hidden, num_classes)`, or it is a head: `self.classifier`,
    `self.head`), or to scores on their way into `cross_entropy`, `nll_loss` or
    `BCEWithLogitsLoss`. Off by default.

    Dropout on hidden features is not reported, nor the residual dropout a Transformer block
    applies to its output projection (`return self.dropout(self.out_proj(y))`): those outputs
    are features for the next layer, not scores.

    ## Why is this bad?
    Dropout zeroes single entries and scales the rest by `1 / (1 - p)`. On the final scores that
    means a class's score is set to 0 (not to "no evidence": 0 may be the highest score of all)
    and the others are inflated, so the loss trains on corrupted predictions; the regularisation
    dropout is meant for belongs before the classifier.

    ## Example
    ```python
    def forward(self, x):
        return self.dropout(self.classifier(self.body(x)))
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.classifier(self.dropout(self.body(x)))
    ```
    """

    code = "TL405"
    name = "dropout-on-logits"
    summary = "Dropout applied to the class scores a model outputs zeroes and inflates single scores"
    severity = Severity.WARNING
    default_enabled = False

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._names_dropout = "ropout" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._names_dropout or not node.args or not self._is_dropout(node):
            return
        scores = argument(node, 0, "input")
        if scores is None:
            return
        # What a classification loss reads is scores, whatever made them.
        facts = self.ctx.tensors.facts(scores)
        layer = getattr(facts, "activated_by", None) if getattr(facts, "activation", None) == "logits" else None
        if not self._into_loss(node) and not (self._returned_by_forward(node) and self._makes_scores(layer)):
            return
        related = (RelatedNode(layer, "the scores are made here"),) if isinstance(layer, cst.CSTNode) else ()
        self.report(
            node,
            f"dropout on `{self.ctx.code_for(scores)}`, the class scores, zeroes single scores and inflates the "
            "others; apply dropout to the features before the last layer",
            related=related,
        )

    def _is_dropout(self, call: cst.Call) -> bool:
        if self.ctx.callee(call) in _DROPOUT_FUNCTIONS:
            return True
        if "drop" not in (dotted_name(call.func) or "").lower():
            return False  # asked of layers named for dropout only: facts are not free
        layer = self.ctx.tensors.facts(call.func)
        return getattr(layer, "kind", None) in _DROPOUT_LAYERS

    def _into_loss(self, call: cst.Call) -> bool:
        """`F.cross_entropy(F.dropout(logits), y)`: the dropped scores are what the loss reads."""
        ancestors = self.ctx.ancestors
        if len(ancestors) < 2 or not isinstance(ancestors[-1], cst.Arg) or not isinstance(ancestors[-2], cst.Call):
            return False
        loss = ancestors[-2]
        return ancestors[-1] is loss.args[0] and called_function(self.ctx, loss) in _SCORE_LOSSES

    def _returned_by_forward(self, call: cst.Call) -> bool:
        """`return self.drop(scores)`, or `out = self.drop(scores)` followed by `return out`."""
        function = self.ctx.enclosing_function()
        if function is None or function.name.value != "forward":
            return False
        ancestors = self.ctx.ancestors
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, cst.Return):
            return True
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and len(ancestors) >= 3):
            return False
        target = dotted_name(parent.targets[0].target)
        line, block = ancestors[-2], ancestors[-3]
        statements = suite_statements(block) if isinstance(block, cst.BaseSuite) else []
        following = statements[statements.index(line) + 1:] if line in statements else []
        return bool(following) and _returns_name(following[0], target)

    def _makes_scores(self, layer: cst.CSTNode | None) -> bool:
        """The Linear call that made the scores is a head: its layer's size names the classes, or
        its name says head or classifier."""
        if not isinstance(layer, cst.Call):
            return False
        name = dotted_name(layer.func) or ""
        if _HEAD_NAME.search(name.rsplit(".", 1)[-1]):
            return True
        config = getattr(self.ctx.tensors.facts(layer.func), "config", None)
        built_by = getattr(config, "built_by", None)
        if not isinstance(built_by, cst.Call):
            return False
        size = argument(built_by, 1, "out_features")
        return size is not None and _CLASS_COUNT.search(self.ctx.code_for(size)) is not None


def _returns_name(statement: cst.CSTNode, name: str | None) -> bool:
    if name is None or not isinstance(statement, cst.SimpleStatementLine):
        return False
    first = statement.body[0]
    return isinstance(first, cst.Return) and first.value is not None and dotted_name(first.value) == name
