from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_values import output_activation
from torchlint.analysis.names import method_name, method_receiver, positional_args
from torchlint.analysis.torch_api import (
    LOG_FUNCTIONS, SIGMOID_FUNCTIONS, SOFTMAX_FUNCTIONS, call_matches, functional_module_name, holds_activation,
    taken_here, unary_operand,
)
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Functions and methods whose result is never below 0: the sigmoid of it is at least 0.5.
_NONNEGATIVE = frozenset({"abs", "relu", "exp", "square", "softplus", "sqrt"})


class LogOfSoftmax(Rule):
    """
    ## What it does
    Flags the logarithm of a softmax or a sigmoid computed in two steps: `softmax(x).log()`,
    `torch.log(F.softmax(x, dim=1))`, `torch.log(torch.sigmoid(x))`, also when the softmax or
    sigmoid result reaches the log through a local variable, and the log of the output of a model
    whose last step is one: an `nn.Sequential(..., nn.Softmax(dim=1))` built in the file, or a
    Module class of the file whose `forward` returns `torch.sigmoid(...)` (`torch.log(model(x))`).
    Probabilities made out of sight count too: what a helper or a method of an object of this
    file returns, unpacked or indexed (`_, pmfs = q_network.get_action(obs)`; `pmfs.log()`,
    `torch.log(probs[i, a])`). The sigmoid of a value never below 0 (`torch.abs(d)`, `d ** 2`,
    `F.relu(d)`) is at least 0.5, and its log finite: not reported.

    ## Why is this bad?
    Softmax and sigmoid outputs underflow to exactly 0 for very negative logits, and the log of 0
    is `-inf`: the loss becomes `inf` or `nan` and training diverges. `log_softmax` and
    `logsigmoid` compute the same value in one numerically stable step.

    ## Example
    ```python
    log_probs = F.softmax(logits, dim=-1).log()
    log_p = torch.log(torch.sigmoid(score))
    ```

    ## Use instead
    ```python
    log_probs = F.log_softmax(logits, dim=-1)
    log_p = F.logsigmoid(score)
    ```

    ## Fix safety
    The fix is safe: the result is equal wherever the old expression was finite, and finite where
    it was `-inf`. It is offered when the softmax or sigmoid is written inside the log call.

    Bug left in place: no. Computation changed: only where the old expression underflowed to `-inf`
    (now finite) or lost precision.
    """

    code = "TL201"
    name = "log-of-softmax"
    summary = "Log of softmax or sigmoid: underflows to -inf, use log_softmax / logsigmoid"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        argument = self._log_argument(node)
        if argument is None:
            return
        inner = self.ctx.values.resolve(argument)
        if not isinstance(inner, cst.Call):
            self._check_held_activation(node, argument)
            return
        through_variable = inner is not argument
        if call_matches(self.ctx, inner, SOFTMAX_FUNCTIONS, "softmax"):
            message = "log of `softmax` underflows to -inf; use `log_softmax(...)` with the same `dim`"
            fix = None if through_variable else self._log_softmax_fix(node, inner)
        elif call_matches(self.ctx, inner, SIGMOID_FUNCTIONS, "sigmoid"):
            if self._nonnegative(self._sigmoid_operand(inner)):
                return  # `sigmoid(|x|)` is at least 0.5: its log is finite
            message = "log of `sigmoid` underflows to -inf; use `F.logsigmoid(...)`"
            fix = None if through_variable else self._logsigmoid_fix(node, inner)
        else:
            activation = output_activation(self.ctx, inner)
            if activation is None:
                self._check_held_activation(node, argument)
                return
            stable = "F.log_softmax` (or end the model with `nn.LogSoftmax`)" if activation == "softmax" else (
                "F.logsigmoid`"
            )
            message = (
                f"log of a model whose last step is `{activation}` underflows to -inf; "
                f"return the logits from the model and use `{stable}"
            )
            fix = None
        self.report(node, message, fix=fix)

    def _check_held_activation(self, node: cst.Call, argument: cst.BaseExpression) -> None:
        """The log of probabilities made out of sight: a helper, a method of another object or a
        model of this file returns them (`_, probs = policy.act(obs)`; `torch.log(probs[i, a])`)."""
        for activation, stable in (("softmax", "log_softmax"), ("sigmoid", "F.logsigmoid")):
            if holds_activation(self.ctx, argument, activation):
                self.report(
                    node,
                    f"log of `{activation}` output underflows to -inf where a probability is 0; return "
                    f"`{stable}(...)` of the logits from where the `{activation}` is taken, and use that",
                    related=taken_here(self.ctx, argument, activation),
                )
                return

    def _log_argument(self, call: cst.Call) -> cst.BaseExpression | None:
        """`p` for `p.log()` or `torch.log(p)`."""
        return unary_operand(self.ctx, call, LOG_FUNCTIONS, "log")

    def _log_softmax_fix(self, log_call: cst.Call, softmax: cst.Call) -> FixSpec | None:
        if not isinstance(softmax.func, cst.Attribute) or softmax.func.attr.value != "softmax":
            return None
        renamed = softmax.with_changes(func=softmax.func.with_changes(attr=cst.Name("log_softmax")))
        return FixSpec("Replace with `log_softmax(...)`", ((log_call, self.ctx.code_for(renamed)),))

    def _sigmoid_operand(self, sigmoid: cst.Call) -> cst.BaseExpression | None:
        """`x` of `torch.sigmoid(x)` or `x.sigmoid()`."""
        receiver = method_receiver(sigmoid) if self.ctx.callee(sigmoid) is None else None
        positional = positional_args(sigmoid)
        if receiver is not None and not sigmoid.args:
            return receiver
        if receiver is None and len(sigmoid.args) == 1 and len(positional) == 1:
            return positional[0].value
        return None

    def _nonnegative(self, operand: cst.BaseExpression | None) -> bool:
        """`torch.abs(d)`, `d.abs()`, `F.relu(d)`, `d.exp()`, `d ** 2`: never below 0."""
        if isinstance(operand, cst.BinaryOperation):
            return isinstance(operand.operator, cst.Power) and isinstance(operand.right, cst.Integer) \
                and int(operand.right.value, 0) % 2 == 0
        if not isinstance(operand, cst.Call):
            return False
        callee = self.ctx.callee(operand)
        name = callee.rsplit(".", 1)[-1] if callee is not None else method_name(operand)
        return name in _NONNEGATIVE

    def _logsigmoid_fix(self, log_call: cst.Call, sigmoid: cst.Call) -> FixSpec | None:
        functional = functional_module_name(self.ctx)
        operand = self._sigmoid_operand(sigmoid)
        if operand is None or functional is None:
            return None
        replacement = f"{functional}.logsigmoid({self.ctx.code_for(operand)})"
        return FixSpec("Replace with `F.logsigmoid(...)`", ((log_call, replacement),))
