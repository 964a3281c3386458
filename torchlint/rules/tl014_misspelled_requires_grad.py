from __future__ import annotations

import re

import libcst as cst

from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

_MISSPELLINGS = frozenset({"require_grad", "requires_grads"})
_OPTION = re.compile(r"^[rbuf]*['\"]-*(require[_-]grad|requires[_-]grads)['\"]$", re.IGNORECASE)


class MisspelledRequiresGrad(Rule):
    """
    ## What it does
    Flags `x.require_grad = ...` and `x.requires_grads = ...` (attribute assignments) and the
    keywords `require_grad=` / `requires_grads=` passed to a torch function, where
    `requires_grad` was meant. Files that give the misspelled name a meaning of their own are not
    flagged: a class that sets `self.require_grad`, a parameter, method or class field of that
    name, an attribute of that name read somewhere, a command-line option `--require_grad`. There
    the object's own class defines the name.

    ## Why is this bad?
    Tensors and parameters accept any attribute: `p.require_grad = False` silently creates a new,
    meaningless attribute, and the parameter keeps training (or, with `True`, a tensor is never
    tracked and its `.grad` stays None). Nothing fails; the model just trains the wrong weights.
    Torch functions reject the misspelled keyword with a `TypeError` at run time.

    ## Example
    ```python
    for p in backbone.parameters():
        p.require_grad = False
    ```

    ## Use instead
    ```python
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    The fix renames the attribute or keyword to `requires_grad`. It is unsafe because it changes
    behaviour: the assignment starts to take effect (parameters get frozen, or tracked).

    Bug left in place: no. Computation changed: yes, by design: the flag now takes effect, so what
    is trained or tracked changes.
    """

    code = "TL014"
    name = "misspelled-requires-grad"
    summary = "Misspelled `requires_grad`: the assignment silently does nothing"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[cst.Attribute] = []
        self._targets: set[int] = set()
        # The file gives the name a meaning of its own: a parameter, a method, a class field, an
        # attribute its classes set on `self` or that it reads, a command-line option.
        self._defined = False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.target.value in _MISSPELLINGS:
            self._defined = True  # a class field `require_grad: bool = False`
        self._check_target(node.target)

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value in _MISSPELLINGS:
            self._defined = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value in _MISSPELLINGS:
            self._defined = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _MISSPELLINGS and id(node) not in self._targets:
            self._defined = True  # read somewhere: a config or namespace field

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "grad" in node.value and _OPTION.match(node.value):
            self._defined = True  # `parser.add_argument("--require_grad")`, `getattr(x, "require_grad")`

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is None or node.keyword.value not in _MISSPELLINGS:
            return
        call = self.ctx.parent
        if not isinstance(call, cst.Call):
            return
        qualified = self.ctx.callee(call)
        if qualified is None or not qualified.startswith("torch."):
            return
        self.report(
            node,
            f"`{node.keyword.value}=` is not a parameter of `{qualified}`; did you mean `requires_grad=`?",
            fix=FixSpec("Rename to `requires_grad`", ((node.keyword, "requires_grad"),), Applicability.UNSAFE),
        )

    def leave_Module(self, node: cst.Module) -> None:
        if self._defined:
            return
        for target in self._candidates:
            self.report(
                target,
                f"`.{target.attr.value}` is not a tensor attribute: the assignment silently does nothing; "
                "did you mean `.requires_grad`?",
                fix=FixSpec("Rename to `requires_grad`", ((target.attr, "requires_grad"),), Applicability.UNSAFE),
            )

    def _check_target(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute) or target.attr.value not in _MISSPELLINGS:
            return
        self._targets.add(id(target))
        if self._is_own_attribute(target):
            self._defined = True
        else:
            self._candidates.append(target)

    def _is_own_attribute(self, target: cst.Attribute) -> bool:
        """`self.require_grad = ...` in a method: the class defines its own attribute."""
        if not isinstance(target.value, cst.Name) or self.ctx.enclosing_class() is None:
            return False
        function = self.ctx.enclosing_function()
        params = [*function.params.posonly_params, *function.params.params] if function else []
        return bool(params) and params[0].name.value == target.value.value
