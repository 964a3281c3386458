from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from torchlint.analysis.dataflow import assigned_names
from torchlint.analysis.deprecated_api import (
    DEPRECATED_BY_NAME, DEPRECATED_KEYWORDS, DEPRECATED_LAST_SEGMENTS, DEPRECATED_LOSS_KEYWORDS, DeprecatedApi, FixKind, old_api_reportable,
)
from torchlint.analysis.names import (
    argument, dotted_name, has_star_args, keyword_arg, method_name, positional_args, suite_statements,
)
from torchlint.analysis.torch_api import callable_source, looks_like_loss, torch_module_name
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Reductions that return a 0-dim tensor when called without a dimension.
_FULL_REDUCTIONS = frozenset({"sum", "mean", "prod", "norm", "max", "min", "std", "var"})
_KNOWN, _BY_NAME = "known", "by name"
_REDUCTION_FLAGS = ("reduction", "reduce", "size_average")
_LOSS_FUNCTION_ENDINGS = ("_loss", "cross_entropy", "kl_div", "nll_loss")

# Where a name or attribute is a use of what it refers to (not a definition or a target).
# `warnings.filterwarnings("ignore", category=FutureWarning)`, `simplefilter(action="ignore", ...)`
# of a deprecation category or of a message that says "deprecated": the file silences a
# deprecation warning it has seen, and keeps the API on purpose.
_SILENCED = re.compile(
    r"\b(?:filterwarnings|simplefilter)\(\s*(?:action\s*=\s*)?[\"']ignore[\"']"
    r"[^)]*?(?:FutureWarning|DeprecationWarning|deprecat)",
    re.S,
)
_USE_PARENTS = (cst.Call, cst.Decorator, cst.Arg, cst.Assign, cst.AnnAssign, cst.Element, cst.Return, cst.IfExp)


class DeprecatedApiUse(Rule):
    """
    ## What it does
    Flags uses of deprecated or removed torch APIs listed in one data table
    (`torchlint/analysis/deprecated_api.py`), each with its replacement: `torch.range`,
    `torch.chain_matmul`, `torch.cholesky`, `torch.qr`, `torch.symeig`, `torch.lstsq`,
    `torch.ger`, `torch.norm` (use `torch.linalg`), `torch.nn.utils.weight_norm` (use
    `torch.nn.utils.parametrizations.weight_norm`), `functorch.vmap` and friends (use
    `torch.func`), `torch.backends.cuda.sdp_kernel` (use `torch.nn.attention.sdpa_kernel`),
    `torch.testing.assert_allclose`, `F.upsample`, and more; the removed keyword
    `Variable(..., volatile=True)`; the loss keywords `size_average=` / `reduce=` (use
    `reduction=`); and the torch 0.3 idiom `loss.data[0]` / `loss[0]` on a 0-dim tensor, which
    raises `IndexError` since torch 0.4. Aliases (`from torch import qr as old_qr`) are
    reported where they are used. Each use is reported once, and an
    import statement of deprecated names once. Version-gated fallbacks, `try`/`except ImportError`
    fallbacks and code for a configured `target-torch-version` older than the replacement are not
    flagged, nor is an API deprecated only in torch versions newer than every one the project's
    requirement admits (`torch.backends.cuda.sdp_kernel`, deprecated in 2.3, under
    `torch>=2.0,<2.3`). The AMP APIs are TL501's.

    ## Why is this bad?
    Deprecated APIs warn, behave inconsistently with their replacements (`torch.range` includes
    its end point, `torch.norm` picks a norm from the input's shape), and are removed in later
    releases: the removed ones already raise `RuntimeError`.

    ## Example
    ```python
    from functorch import vmap
    steps = torch.range(0, 10)
    L = torch.cholesky(A)
    ```

    ## Use instead
    ```python
    from torch.func import vmap
    steps = torch.arange(0, 11)
    L = torch.linalg.cholesky(A)
    ```

    ## Fix safety
    A fix is offered where the table marks the replacement a drop-in rename (same parameters,
    same results): it is safe (`torch.ger` to `torch.outer`, `functorch.vmap` to
    `torch.func.vmap`). The `torch.linalg` rewrites are safe too, and checked on torch 2.13 to
    give identical results: `torch.cholesky(A, upper=True)` becomes
    `torch.linalg.cholesky(A).mH`, `torch.qr(A, some=False)` becomes
    `torch.linalg.qr(A, mode="complete")`, `torch.chain_matmul(a, b, c)` becomes
    `torch.linalg.multi_dot([a, b, c])` (not offered for a single matrix, which `multi_dot`
    rejects). `loss.data[0]` becomes `loss.item()`: safe where the tensor is known to be 0-dim
    (a full reduction, a torch loss function or loss module with its default reduction), as the
    old code raises; unsafe where only its name says it is a loss (an unreduced loss's `[0]` is
    legal). A loss built with `reduction=` is not reported. Renames that
    change behaviour the author must check are unsafe
    (`torch.testing.assert_allclose` to `assert_close`, whose default checks are stricter;
    `weight_norm`, whose state_dict keys change). Replacements with different arguments get no
    fix. An import is fixed when every name it imports moves to the same new module.

    ## Severity
    A warning, except for the APIs that current torch still runs without a warning (deprecated in
    the documentation only: `torch.norm`, `torch.svd`, `torch.ger`, `torch.autograd.Variable`,
    `nn.UpsamplingNearest2d`, `nn.UpsamplingBilinear2d`): their uses are hints, a newer spelling
    of working code, reported only under `show-hints = true` or `--show-hints` (and in the
    editor). So are the uses of an API that still works in a file that silences deprecation
    warnings (`warnings.simplefilter("ignore", FutureWarning)`, or a `filterwarnings("ignore", ...)`
    of a message that says "deprecated"): its author has seen the warning and keeps the API on
    purpose. A removed API stays a warning: it raises whatever the filters say.

    Not reported: a function named in a set display (`{torch.empty, torch.range}`, a table of
    factories that a `TorchFunctionMode` compares against), which is compared, never called.

    Bug left in place: no. Computation changed: no for the safe fixes (same function under its
    current name, or a rewrite checked to give identical results); yes for the unsafe renames, as
    described.
    """

    code = "TL504"
    name = "deprecated-api"
    summary = "Use of a deprecated or removed torch API"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Local names bound by more than one import (`try: from torch import vmap` /
        # `except ImportError: from functorch import vmap`): which one a use means is unknown.
        self._import_targets: dict[str, str] = {}
        self._ambiguous_names: set[str] = set()
        self._assigned: dict[int, set[str]] = {}
        # Local names an import binds to a deprecated API under another name (`qr as old_qr`).
        self._aliases: set[str] = set()

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value
            if isinstance(bound, cst.Name):
                self._record_binding(bound.value, dotted_name(alias.name) or "")

    def _record_binding(self, local: str, target: str) -> None:
        previous = self._import_targets.setdefault(local, target)
        if previous != target:
            self._ambiguous_names.add(local)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in DEPRECATED_LAST_SEGMENTS:
            self._check_use(node)

    def visit_Name(self, node: cst.Name) -> None:
        if (node.value in DEPRECATED_LAST_SEGMENTS or node.value in self._aliases) \
                and node.value not in self._ambiguous_names:
            if not self._assigned_in_scope(node.value):
                self._check_use(node)

    def _assigned_in_scope(self, name: str) -> bool:
        """The name is (also) a variable here: assigned in an enclosing function or the module."""
        for scope in self.ctx.ancestors:
            if isinstance(scope, (cst.Module, cst.FunctionDef)):
                names = self._assigned.get(id(scope))
                if names is None:
                    statements = suite_statements(scope.body) if isinstance(scope, cst.FunctionDef) else scope.body
                    names = assigned_names(statements)
                    self._assigned[id(scope)] = names
                if name in names:
                    return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        """`nn.CrossEntropyLoss(size_average=False)`, `F.mse_loss(x, y, reduce=False)`."""
        found = [keyword_arg(node, keyword) for keyword in DEPRECATED_LOSS_KEYWORDS]
        if not any(found):
            return
        callee = self.ctx.callee(node) or ""
        is_loss = (callee.startswith("torch.nn.functional.") and callee.endswith(_LOSS_FUNCTION_ENDINGS)) or (
            callee.startswith("torch.nn.") and callee.endswith("Loss")
        )
        if not is_loss or self.ctx.guards.in_compat_code(node):
            return
        for arg in found:
            if arg is not None:
                self.report(
                    arg,
                    f"`{arg.keyword.value}=` is deprecated since torch 0.4.1 (UserWarning); use "
                    "`reduction=\"mean\"`, `\"sum\"` or `\"none\"`",
                )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`loss.data[0]` / `loss[0]` on a 0-dim loss: the torch 0.3 way to read a number."""
        element = node.slice[0].slice if len(node.slice) == 1 else None
        if not isinstance(element, cst.Index) or not (isinstance(element.value, cst.Integer) and element.value.value == "0"):
            return
        if isinstance(self.ctx.parent, (cst.AssignTarget, cst.Del)) or self.ctx.guards.in_compat_code(node):
            return
        value = node.value
        legacy = isinstance(value, cst.Attribute) and value.attr.value == "data"
        tensor = value.value if legacy else value
        evidence = self._zero_dim(tensor, legacy)
        if evidence is None:
            return
        written = self.ctx.code_for(tensor)
        # Known 0-dim, `.item()` is what the old code meant; a 0-dim read from a loss's name alone
        # may be an unreduced loss, whose `[0]` is legal: then the fix waits for `--unsafe-fixes`.
        applicability = Applicability.SAFE if evidence == _KNOWN else Applicability.UNSAFE
        self.report(
            node,
            f"`{self.ctx.code_for(node)}` indexes a 0-dim tensor, which raises `IndexError` since torch 0.4 "
            f"(removed: scalars are 0-dim tensors); use `{written}.item()`",
            fix=FixSpec(f"Replace with `{written}.item()`", ((node, f"{written}.item()"),), applicability),
        )

    def _zero_dim(self, expr: cst.BaseExpression, legacy: bool) -> str | None:
        """How `expr` is known 0-dim: `_KNOWN` (a full reduction such as `x.sum()`, a known scalar
        tensor, a torch loss function without `reduction=`), `_BY_NAME` (for the `.data[0]`
        idiom, a loss by its name, not unreduced), or None."""
        facts = self.ctx.kinds.tensor(expr)
        if facts is not None and facts.scalar is True and not facts.maybe:
            return _KNOWN
        value = self.ctx.values.resolve(expr)
        if not isinstance(value, cst.Call):
            return _BY_NAME if legacy and looks_like_loss(value) else None
        if method_name(value) in _FULL_REDUCTIONS and not value.args:
            return _KNOWN
        if keyword_arg(value, "reduction") is not None:
            return None
        module = self._loss_module(value)
        if module is not None:
            # `criterion(x, y)`: 0-dim with the default reduction; with `reduction=` (or the old
            # `reduce=` / `size_average=`) it may have the batch's shape.
            return None if any(keyword_arg(module, flag) is not None for flag in _REDUCTION_FLAGS) else _KNOWN
        callee = self.ctx.callee(value) or ""
        if callee.startswith("torch.nn.functional.") and callee.endswith(_LOSS_FUNCTION_ENDINGS):
            return _KNOWN
        return _BY_NAME if legacy and looks_like_loss(value) else None

    def _loss_module(self, call: cst.Call) -> cst.Call | None:
        """The `torch.nn.<...>Loss(...)` construction that `call` calls (inline, through a local
        or a `self.` attribute), or None."""
        made = callable_source(self.ctx, call.func)
        if not isinstance(made, cst.Call):
            return None
        constructor = self.ctx.callee(made) or ""
        return made if constructor.startswith("torch.nn.") and constructor.endswith("Loss") else None

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        module = "." * len(node.relative) + (dotted_name(node.module) or "")
        found = []
        for alias in node.names:
            imported = f"{module}.{dotted_name(alias.name)}"
            local = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(local, cst.Name):
                self._record_binding(local.value, imported)
                if imported in DEPRECATED_BY_NAME:
                    self._aliases.add(local.value)
            api = DEPRECATED_BY_NAME.get(imported)
            if api is not None and old_api_reportable(self.ctx, api, node):
                found.append(api)
        if not found:
            return
        fix = self._import_fix(node, found) if len(found) == len(node.names) else None
        if len(found) == 1:
            message = f"import of `{found[0].name}`, {found[0].describe()}; {found[0].advice()}"
        else:
            names = ", ".join(f"`{api.name}`" for api in found)
            advice = "; ".join(f"for `{api.last_segment}` {api.advice()}" for api in found)
            message = f"import of deprecated {names}; {advice}"
        self.report(node, message, fix=fix, severity=self._severity(*found))

    def _check_use(self, node: cst.Name | cst.Attribute) -> None:
        parent = self.ctx.parent
        if not isinstance(parent, _USE_PARENTS) or not self._is_value_of(parent, node):
            return
        api = DEPRECATED_BY_NAME.get(self.ctx.qualified_name(node) or "")
        if api is None or self._in_a_set() or not old_api_reportable(self.ctx, api, node):
            return
        call = parent if isinstance(parent, cst.Call) else None
        for (name, keyword), advice in DEPRECATED_KEYWORDS.items():
            if call is not None and name == api.name and keyword_arg(call, keyword) is not None:
                self.report(keyword_arg(call, keyword), advice)
                return
        self.report(node, f"`{api.name}` is {api.describe()}; {api.advice()}", fix=self._use_fix(node, api, call),
                    severity=self._severity(api))

    def _severity(self, *apis: DeprecatedApi) -> Severity:
        """A hint where every API still works without a warning (a deprecation in the docs only),
        or still works and the file silences deprecation warnings (its author keeps the API on purpose)."""
        working = not any(api.removed for api in apis)
        return Severity.HINT if all(api.silent for api in apis) or working and self._silenced else Severity.WARNING

    @cached_property
    def _silenced(self) -> bool:
        """Asked at the first deprecated API only: most files use none."""
        return _SILENCED.search(self.ctx.source) is not None

    def _in_a_set(self) -> bool:
        """A function named in a set display (`{torch.empty, torch.range}`, `fn in {...}`) is
        compared by identity, not called: it never warns, and renaming it would change the test."""
        ancestors = self.ctx.ancestors
        return len(ancestors) >= 2 and isinstance(ancestors[-1], cst.Element) and isinstance(ancestors[-2], cst.Set)

    @staticmethod
    def _is_value_of(parent: cst.CSTNode, node: cst.CSTNode) -> bool:
        if isinstance(parent, cst.Call):
            return parent.func is node
        if isinstance(parent, cst.Decorator):
            return parent.decorator is node
        if isinstance(parent, (cst.Arg, cst.Assign, cst.AnnAssign, cst.Element, cst.Return)):
            return parent.value is node
        return isinstance(parent, cst.IfExp) and node in (parent.body, parent.orelse)

    def _use_fix(self, node: cst.Name | cst.Attribute, api: DeprecatedApi, call: cst.Call | None) -> FixSpec | None:
        if api.fix is FixKind.NONE or api.rename_to is None:
            return None
        if api.fix is FixKind.REWRITE:
            return self._rewrite_fix(api, call)
        if isinstance(node, cst.Name):
            return self._bare_name_fix(node, api)
        if api.fix is FixKind.RENAME_SINGLE_ARGUMENT:
            if call is None or len(call.args) != 1 or len(positional_args(call)) != 1:
                return None
        applicability = Applicability.UNSAFE if api.fix is FixKind.UNSAFE_RENAME else Applicability.SAFE
        message = f"Replace with `{api.rename_to}`"
        old_module, _, _ = api.name.rpartition(".")
        new_module, _, new_name = api.rename_to.rpartition(".")
        if old_module == new_module:
            # Same module: keep how the code spells it (`nn.init.normal` -> `nn.init.normal_`).
            return FixSpec(message, ((node.attr, new_name),), applicability)
        torch_name = torch_module_name(self.ctx)
        if torch_name is None or not api.rename_to.startswith("torch."):
            return None
        replacement = f'{torch_name}.{api.rename_to.removeprefix("torch.")}'
        return FixSpec(message, ((node, replacement),), applicability)

    def _bare_name_fix(self, node: cst.Name, api: DeprecatedApi) -> FixSpec | None:
        """`ger(a, b)` after `from torch import ger` becomes `torch.outer(a, b)` where `torch` is
        imported. A name that keeps its spelling (`functorch.vmap` -> `torch.func.vmap`) is fixed
        at its import instead."""
        torch_name = torch_module_name(self.ctx)
        if torch_name is None or api.fix is FixKind.UNSAFE_RENAME or not api.rename_to.startswith("torch."):
            return None
        if api.rename_to.rsplit(".", 1)[-1] == api.last_segment:
            return None
        replacement = f'{torch_name}.{api.rename_to.removeprefix("torch.")}'
        return FixSpec(f"Replace with `{api.rename_to}`", ((node, replacement),))

    def _rewrite_fix(self, api: DeprecatedApi, call: cst.Call | None) -> FixSpec | None:
        """The call rewritten for its `torch.linalg` replacement: same results, new arguments."""
        torch_name = torch_module_name(self.ctx)
        if call is None or torch_name is None or keyword_arg(call, "out") is not None:
            return None
        rewritten = _REWRITERS[api.name](self.ctx, call)
        if rewritten is None:
            return None
        function, arguments, suffix = rewritten
        replacement = f'{torch_name}.{function.removeprefix("torch.")}({arguments}){suffix}'
        return FixSpec(f"Replace with `{function}(...){suffix}`", ((call, replacement),))

    def _import_fix(self, node: cst.ImportFrom, apis: list[DeprecatedApi]) -> FixSpec | None:
        if any(api.fix not in (FixKind.RENAME, FixKind.UNSAFE_RENAME) or api.rename_to is None for api in apis):
            return None
        new_modules = {api.rename_to.rsplit(".", 1)[0] for api in apis}
        if len(new_modules) != 1 or any(api.rename_to.rsplit(".", 1)[1] != api.last_segment for api in apis):
            return None
        new_module = new_modules.pop()
        unsafe = any(api.fix is FixKind.UNSAFE_RENAME for api in apis)
        fixed = node.with_changes(module=cst.parse_expression(new_module))
        return FixSpec(
            f"Import from `{new_module}`", ((node, self.ctx.code_for(fixed)),),
            Applicability.UNSAFE if unsafe else Applicability.SAFE,
        )




def _first_and_flag(ctx, call: cst.Call, flag: str) -> tuple[str, cst.BaseExpression | None] | None:
    """The matrix argument's text and the flag's value (positional or keyword) of `f(A, flag)`."""
    if has_star_args(call) or len(call.args) > 2:
        return None
    matrix = argument(call, 0, "input")
    if matrix is None or any(arg.keyword is not None and arg.keyword.value not in ("input", flag) for arg in call.args):
        return None
    return ctx.code_for(matrix), argument(call, 1, flag)


def _flag_rewrite(ctx, call: cst.Call, flag: str, default: bool, function: str, flipped: tuple[str, str],
                  variable: str) -> tuple[str, str, str] | None:
    """`f(A)` / `f(A, flag=<default>)` -> `function(A)`; the other constant -> `function(A<extra>)<suffix>`
    from `flipped`; a variable `v` -> `function(A<variable with {} = v>)`."""
    parts = _first_and_flag(ctx, call, flag)
    if parts is None:
        return None
    matrix, value = parts
    constant = value.value if isinstance(value, cst.Name) and value.value in ("True", "False") else None
    if value is None or constant == str(default):
        return function, matrix, ""
    if constant is not None:
        extra, suffix = flipped
        return function, f"{matrix}{extra}", suffix
    return function, f"{matrix}{variable.format(ctx.code_for(value))}", ""


def _rewrite_cholesky(ctx, call: cst.Call) -> tuple[str, str, str] | None:
    """`torch.cholesky(A, upper=True)` -> `torch.linalg.cholesky(A).mH` (the conjugate transpose)."""
    return _flag_rewrite(ctx, call, "upper", False, "torch.linalg.cholesky", ("", ".mH"), ", upper={}")


def _rewrite_qr(ctx, call: cst.Call) -> tuple[str, str, str] | None:
    """`torch.qr(A, some=False)` -> `torch.linalg.qr(A, mode="complete")`."""
    return _flag_rewrite(
        ctx, call, "some", True, "torch.linalg.qr", (', mode="complete"', ""), ', mode="reduced" if {} else "complete"'
    )


def _rewrite_chain_matmul(ctx, call: cst.Call) -> tuple[str, str, str] | None:
    """`torch.chain_matmul(a, b, c)` -> `torch.linalg.multi_dot([a, b, c])` (two or more matrices)."""
    if len(call.args) < 2 or any(arg.keyword is not None or arg.star for arg in call.args):
        return None  # multi_dot needs at least two matrices; chain_matmul(a) returned a itself
    return "torch.linalg.multi_dot", f"[{', '.join(ctx.code_for(arg.value) for arg in call.args)}]", ""


_REWRITERS = {
    "torch.cholesky": _rewrite_cholesky,
    "torch.qr": _rewrite_qr,
    "torch.chain_matmul": _rewrite_chain_matmul,
}
