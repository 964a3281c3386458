from __future__ import annotations

import libcst as cst

from torchlint.analysis.dataflow import assigned_names
from torchlint.analysis.deprecated_api import (
    DEPRECATED_BY_NAME, DEPRECATED_LAST_SEGMENTS, DeprecatedApi, FixKind, old_api_reportable,
)
from torchlint.analysis.names import positional_args, suite_statements
from torchlint.analysis.torch_api import torch_module_name
from torchlint.context import FixSpec
from torchlint.diagnostics import Applicability, Severity
from torchlint.rule import Rule

# Where a name or attribute is a use of what it refers to (not a definition or a target).
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
    `torch.testing.assert_allclose`, `F.upsample`, and more. Each use is reported once, and an
    import statement of deprecated names once. Version-gated fallbacks, `try`/`except ImportError`
    fallbacks and code for a configured `target-torch-version` older than the replacement are not
    flagged. The AMP APIs are TL501's.

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
    `torch.func.vmap`). Renames that change behaviour the author must check are unsafe
    (`torch.testing.assert_allclose` to `assert_close`, whose default checks are stricter;
    `weight_norm`, whose state_dict keys change). Replacements with different arguments get no
    fix. An import is fixed when every name it imports moves to the same new module.
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

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value
            if isinstance(bound, cst.Name):
                self._record_binding(bound.value, self.ctx.code_for(alias.name))

    def _record_binding(self, local: str, target: str) -> None:
        previous = self._import_targets.setdefault(local, target)
        if previous != target:
            self._ambiguous_names.add(local)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in DEPRECATED_LAST_SEGMENTS:
            self._check_use(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in DEPRECATED_LAST_SEGMENTS and node.value not in self._ambiguous_names:
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

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        module = "." * len(node.relative) + self.ctx.code_for(node.module)
        found = []
        for alias in node.names:
            imported = f"{module}.{self.ctx.code_for(alias.name)}"
            local = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(local, cst.Name):
                self._record_binding(local.value, imported)
            api = DEPRECATED_BY_NAME.get(imported)
            if api is not None and old_api_reportable(self.ctx, api.replacement_since, node):
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
        self.report(node, message, fix=fix)

    def _check_use(self, node: cst.Name | cst.Attribute) -> None:
        parent = self.ctx.parent
        if not isinstance(parent, _USE_PARENTS) or not self._is_value_of(parent, node):
            return
        api = DEPRECATED_BY_NAME.get(self.ctx.qualified_name(node) or "")
        if api is None or not old_api_reportable(self.ctx, api.replacement_since, node):
            return
        call = parent if isinstance(parent, cst.Call) else None
        self.report(node, f"`{api.name}` is {api.describe()}; {api.advice()}", fix=self._use_fix(node, api, call))

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
        if api.fix is FixKind.NONE or api.rename_to is None or isinstance(node, cst.Name):
            return None  # a bare name is fixed at its import
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
