from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.module_attributes import in_module_method, self_attribute
from torchlint.analysis.names import argument, assigns_name, has_star_args, keyword_arg, positional_args
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# Functional dropouts whose `training` defaults to True (alpha dropouts default to False).
_DROPOUTS = frozenset(
    f"torch.nn.functional.{name}" for name in ("dropout", "dropout1d", "dropout2d", "dropout3d")
)

# A docstring sentence that says the dropout stays on in evaluation (Tacotron 2's prenet: "This
# module always applies dropout even in evaluation"), or that it is Monte Carlo dropout.
_SENTENCES = re.compile(r"[^.]+")
_KEPT_ON = re.compile(
    r"\b(?:always|even|still)\b.*\b(?:eval(?:uation)?|inference|test(?:ing)?)\b", re.IGNORECASE | re.DOTALL)
_TURNED_OFF = re.compile(r"\b(?:not|no|never|disabled?|off|zero|0)\b", re.IGNORECASE)
_MONTE_CARLO = re.compile(r"\b(?:monte[- ]carlo|mc)[- ]dropout\b", re.IGNORECASE)


def _says_kept_on(docstring: str | None) -> bool:
    if not docstring:
        return False
    return _MONTE_CARLO.search(docstring) is not None or any(
        "dropout" in sentence.lower() and _KEPT_ON.search(sentence) and not _TURNED_OFF.search(sentence)
        for sentence in _SENTENCES.findall(docstring))


def _is_zero(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0.0


def _zeroed_in_eval(statement: cst.If, name: str) -> bool:
    """`if not self.training: name = 0.0` (or `if self.training: ... else: name = 0.0`)."""
    test = statement.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and _tests_training(test.expression):
        eval_branch = statement.body
    elif _tests_training(test) and isinstance(statement.orelse, cst.Else):
        eval_branch = statement.orelse.body
    else:
        return False
    return assigns_name(eval_branch, name, _is_zero)


def _zeroed_in(function: cst.FunctionDef, name: str) -> bool:
    """`function` sets `name` to 0 outside training: `if not self.training: name = 0.0`."""
    return any(isinstance(node, cst.If) and _zeroed_in_eval(node, name) for node in nodes_in_order(function.body))


def _tests_training(test: cst.BaseExpression) -> bool:
    """`self.training`, alone or as a term of an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_training(test.left) or _tests_training(test.right)
    return isinstance(test, cst.Attribute) and test.attr.value == "training"


class FunctionalDropoutWithoutTraining(Rule):
    """
    ## What it does
    Flags `F.dropout(x, p)` (and `dropout1d/2d/3d`) called inside a method of an `nn.Module`
    without `training=`. Not where eval skips it: in the body of `if self.training:` (also
    joined by `and`), or with `p` set to 0 outside training (`self.p if self.training else 0.0`,
    or `if not self.training: p = 0.0` / `else: p = self.p` before the call,
    inline or through a local, also by every method of the class that calls this one with `p`:
    `self._attention(q, k, v, dropout_p)`). Nor where the method's or its class's docstring says
    the dropout stays on in evaluation (Tacotron 2's prenet: "This module always applies dropout
    even in evaluation") or is Monte Carlo dropout: the author chose it, and wrote so.

    ## Why is this bad?
    The functional form does not know the module's mode: `training` defaults to True, so the
    dropout stays active after `model.eval()` and evaluation results are noisy and too low.
    `nn.Dropout` or `training=self.training` follow the mode. Deliberate always-on dropout
    (MC dropout) says so with `training=True`.

    ## Example
    ```python
    def forward(self, x):
        return F.dropout(self.fc(x), p=0.1)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return F.dropout(self.fc(x), p=0.1, training=self.training)
    ```

    ## Fix safety
    The fix adds `training=self.training` and is unsafe: it turns the dropout off in eval mode,
    which changes the model's evaluation outputs (to the intended ones).

    Bug left in place: no. Computation changed: evaluation outputs change (dropout off in eval
    mode); training is unchanged.
    """

    code = "TL010"
    name = "functional-dropout-without-training"
    summary = "`F.dropout` in a Module without `training=` stays active in eval mode"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or self.ctx.callee(node) not in _DROPOUTS:
            return
        if has_star_args(node) or keyword_arg(node, "training") is not None or len(positional_args(node)) > 2:
            return
        rate = argument(node, 1, "p")
        if _is_zero(rate) or self._off_outside_training(rate) or self._under_training_test(node):
            return
        if not in_module_method(self.ctx) or self.ctx.guards.in_version_gate(node) or self._documented_kept_on():
            return
        written = self.ctx.code_for(node.func)
        self.report(
            node,
            f"`{written}` without `training=` stays active after `model.eval()`; pass "
            "`training=self.training` (or use `nn.Dropout`)",
            fix=self._fix(node),
        )

    def _off_outside_training(self, rate: cst.BaseExpression | None) -> bool:
        """`p = self.p if self.training else 0.0` (inline or through a local), or the same as an
        `if not self.training: p = 0.0` / `else:` statement: no dropout in eval."""
        value = self.ctx.values.resolve(rate) if isinstance(rate, cst.Name) else rate
        if isinstance(value, cst.IfExp) and _tests_training(value.test) and _is_zero(value.orelse):
            return True
        function = self.ctx.enclosing_function()
        if not isinstance(rate, cst.Name) or function is None:
            return False
        return _zeroed_in(function, rate.value) or self._passed_zeroed(function, rate.value)

    def _passed_zeroed(self, method: cst.FunctionDef, name: str) -> bool:
        """`p` is a parameter of the method, and every `self.<method>(...)` of its class passes it
        a rate set to 0 outside training there (torchtext's T5 attention sets `dropout_p` so and
        hands it to `_t5_dot_product_attention`)."""
        classdef = self.ctx.enclosing_class()
        params = [param.name.value for param in method.params.params]
        if classdef is None or name not in params[1:]:
            return False
        index = params.index(name) - 1  # after `self`
        calls = [
            (caller, call) for caller in classdef.body.body if isinstance(caller, cst.FunctionDef)
            for call in nodes_in_order(caller.body)
            if isinstance(call, cst.Call) and self_attribute(call.func) == method.name.value
        ]
        return bool(calls) and all(
            _is_zero(given) or isinstance(given, cst.Name) and _zeroed_in(caller, given.value)
            for caller, call in calls for given in [argument(call, index, name)]
        )

    def _documented_kept_on(self) -> bool:
        """The method's or its class's docstring says the dropout stays on in evaluation, or is
        Monte Carlo dropout: the author chose it, and wrote so."""
        definitions = (self.ctx.enclosing_function(), self.ctx.enclosing_class())
        return any(_says_kept_on(definition.get_docstring()) for definition in definitions if definition is not None)

    def _under_training_test(self, node: cst.Call) -> bool:
        """In the body of `if self.training:` (also `if self.training and ...:`): eval skips it."""
        ancestors = self.ctx.ancestors
        for index, ancestor in enumerate(ancestors[:-1]):
            if isinstance(ancestor, cst.If) and ancestors[index + 1] is ancestor.body and _tests_training(ancestor.test):
                return True
        return False

    def _fix(self, node: cst.Call) -> FixSpec | None:
        function = self.ctx.enclosing_function()
        params = function.params.params if function is not None else ()
        if not params or params[0].name.value != "self":
            return None
        training = cst.Arg(
            keyword=cst.Name("training"),
            value=cst.Attribute(cst.Name("self"), cst.Name("training")),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        arguments = [*node.args]
        if arguments[-1].comma == cst.MaybeSentinel.DEFAULT:
            arguments[-1] = arguments[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        fixed = node.with_changes(args=[*arguments, training])
        return FixSpec("Pass `training=self.training`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
