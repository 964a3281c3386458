from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_values import output_activation
from torchlint.analysis.names import argument, has_star_args, keyword_arg, positional_args
from torchlint.analysis.torch_api import (
    BINARY_CROSS_ENTROPY_LOSSES, SIGMOID_FUNCTIONS, called_function, functional_module_name, loss_of_produced_input,
    taken_here,
    unary_operand,
)
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

_FUNCTIONAL_BCE = "torch.nn.functional.binary_cross_entropy"


class SigmoidBeforeBce(Rule):
    """
    ## What it does
    Flags `binary_cross_entropy` / `BCELoss` whose input is the output of a `sigmoid`, written
    inline or passed through a local variable, or the output of a model whose last step is one
    (an `nn.Sequential(..., nn.Sigmoid())` built in the file, or a Module class of the file whose
    `forward` returns `torch.sigmoid(...)`). Loss modules are recognised when built inline, held
    in a local, or assigned once to a `self.` attribute.

    ## Why is this bad?
    For large logits the sigmoid rounds to exactly 0 or 1 in floating point, and the log inside
    the loss becomes `-inf`: PyTorch clamps it to -100, so the loss saturates and its gradient
    vanishes for confidently wrong predictions. Under autocast, `binary_cross_entropy` refuses
    half precision inputs altogether. `binary_cross_entropy_with_logits` fuses both steps with the
    log-sum-exp trick and stays exact.

    ## Example
    ```python
    loss = F.binary_cross_entropy(torch.sigmoid(logits), target)
    criterion = nn.BCELoss()
    loss = criterion(torch.sigmoid(logits), target)
    ```

    ## Use instead
    ```python
    loss = F.binary_cross_entropy_with_logits(logits, target)
    criterion = nn.BCEWithLogitsLoss()
    loss = criterion(logits, target)
    ```

    ## Fix safety
    The fix rewrites `F.binary_cross_entropy(torch.sigmoid(x), y, ...)` into
    `F.binary_cross_entropy_with_logits(x, y, ...)` (the same parameters in the same order). It is
    safe: the value is equal where the old one was accurate, and exact where the old one saturated.
    It is offered only for the functional form with the sigmoid written inline.

    Bug left in place: no. Computation changed: only where the old sigmoid saturated (now exact) or
    lost precision.
    """

    code = "TL204"
    name = "sigmoid-before-bce"
    summary = "Sigmoid output fed to binary_cross_entropy: use binary_cross_entropy_with_logits"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        found = loss_of_produced_input(self.ctx, node, SIGMOID_FUNCTIONS, "sigmoid", BINARY_CROSS_ENTROPY_LOSSES)
        if (found is None or found[1] is None) and self._check_model_output(node):
            return
        if found is None:
            return
        if found[0] not in BINARY_CROSS_ENTROPY_LOSSES:
            return
        loss, sigmoid, written = found
        fix = self._with_logits_fix(node, sigmoid) if sigmoid is written and loss == _FUNCTIONAL_BCE else None
        self.report(
            node,
            "`binary_cross_entropy` of a `sigmoid` saturates for large logits; use "
            "`binary_cross_entropy_with_logits` (`BCEWithLogitsLoss`) on the logits",
            fix=fix,
            related=() if sigmoid is not None else taken_here(self.ctx, written, "sigmoid"),
        )

    def _check_model_output(self, node: cst.Call) -> bool:
        """`criterion(net(x), y)` with a BCE criterion and a `net` whose last step is a sigmoid:
        reported, with that in the message."""
        written = argument(node, 0, "input") if node.args else None
        producer = self.ctx.values.resolve(written) if written is not None else None
        if not isinstance(producer, cst.Call) or called_function(self.ctx, node) not in BINARY_CROSS_ENTROPY_LOSSES:
            return False
        if output_activation(self.ctx, producer) != "sigmoid":
            return False
        self.report(
            node,
            "`binary_cross_entropy` of a model whose last step is `sigmoid` saturates for large logits; "
            "drop the final sigmoid and use `binary_cross_entropy_with_logits` (`BCEWithLogitsLoss`)",
        )
        return True

    def _with_logits_fix(self, loss: cst.Call, sigmoid: cst.Call) -> FixSpec | None:
        logits = unary_operand(self.ctx, sigmoid, SIGMOID_FUNCTIONS, "sigmoid")
        if logits is None or has_star_args(loss) or len(sigmoid.args) > 1:
            return None
        if isinstance(loss.func, cst.Attribute):
            func = self.ctx.code_for(loss.func.value) + ".binary_cross_entropy_with_logits"
        else:
            functional = functional_module_name(self.ctx)
            if functional is None:
                return None
            func = f"{functional}.binary_cross_entropy_with_logits"
        by_keyword = keyword_arg(loss, "input")
        first = by_keyword if by_keyword is not None else positional_args(loss)[0]
        arguments = [
            arg.with_changes(value=logits) if arg is first else arg for arg in loss.args
        ]
        fixed = loss.with_changes(func=cst.parse_expression(func), args=arguments)
        return FixSpec(
            "Replace with `binary_cross_entropy_with_logits(...)` on the logits", ((loss, self.ctx.code_for(fixed)),)
        )
