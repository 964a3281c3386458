from __future__ import annotations

import libcst as cst

from torchlint.analysis.call_edits import as_keyword, keyword, with_arguments, with_callee
from torchlint.analysis.deprecated_api import (
    AMP_BY_NAME, AMP_LAST_SEGMENTS, DeprecatedAmpApi, old_api_reportable,
)
from torchlint.analysis.torch_api import torch_module_name
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule


def _last_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


class DeprecatedCudaAmp(Rule):
    """
    ## What it does
    Flags calls of the device-specific AMP APIs deprecated in torch 2.4:
    `torch.cuda.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)`, `torch.cpu.amp.autocast(...)`,
    `torch.cpu.amp.GradScaler(...)` and the `torch.cuda.amp.custom_fwd` / `custom_bwd` decorators.
    Import lines are not reported, each call is. Version-gated fallbacks
    (`if _TORCH_GREATER_EQUAL_2_4: ... else: torch.cuda.amp...`), `try`/`except` fallbacks and
    code for a configured `target-torch-version` older than the replacement are not flagged, nor
    is code of a project whose declared torch requirement stops below 2.4 (`torch>=1.10,<1.13`):
    there these APIs are the current ones and warn nothing.

    ## Why is this bad?
    Each call emits a `FutureWarning`, and these aliases will be removed. The device-generic
    `torch.amp` API takes the device as an argument, so the same code serves CUDA, CPU, MPS and
    other accelerators.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast(dtype=torch.bfloat16):
        loss = model(batch)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch)
    ```

    ## Fix safety
    The fix is safe: it passes the device and keeps every argument, turning positional
    `autocast` arguments into keywords because `torch.amp.autocast` orders them differently
    (`torch.cuda.amp.autocast(True)` becomes `torch.amp.autocast("cuda", enabled=True)`). The
    default dtypes are the same. It is offered where `torch` is imported as a module.

    Bug left in place: no. Computation changed: no: the same autocast/GradScaler behaviour on the
    same device, without the FutureWarning.
    """

    code = "TL501"
    name = "deprecated-cuda-amp"
    summary = "Deprecated torch.cuda.amp / torch.cpu.amp API: use torch.amp with the device"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        # A bare name may be an alias (`from torch.cuda.amp import autocast as ac`): resolve it.
        if _last_name(node.func) not in AMP_LAST_SEGMENTS and not isinstance(node.func, cst.Name):
            return
        api = AMP_BY_NAME.get(self.ctx.callee(node) or "")
        if api is None or not old_api_reportable(self.ctx, api, node):
            return
        self.report(node, self._message(api), fix=self._call_fix(node, api))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        # `@torch.cuda.amp.custom_fwd` without parentheses applies it just like a call.
        decorator = node.decorator
        if isinstance(decorator, cst.Call):
            return
        if _last_name(decorator) not in AMP_LAST_SEGMENTS and not isinstance(decorator, cst.Name):
            return
        api = AMP_BY_NAME.get(self.ctx.qualified_name(decorator) or "")
        if api is None or not api.bare_decorator or not old_api_reportable(self.ctx, api, node):
            return
        torch_name = torch_module_name(self.ctx)
        fix = None
        if torch_name is not None:
            replacement = f'{torch_name}.{api.replacement.removeprefix("torch.")}(device_type="{api.device}")'
            fix = FixSpec(self._fix_message(api), ((decorator, replacement),))
        self.report(decorator, self._message(api), fix=fix)

    @staticmethod
    def _message(api: DeprecatedAmpApi) -> str:
        if api.device_argument == "positional":
            use = f"{api.replacement}({_device_text(api)}, ...)"
        else:
            use = f"@{api.replacement}({_device_text(api)})"
        since = ".".join(str(part) for part in api.since)
        return f"`{api.name}` is deprecated since torch {since} (FutureWarning); use `{use}`"

    @staticmethod
    def _fix_message(api: DeprecatedAmpApi) -> str:
        return f"Replace with `{api.replacement}({_device_text(api)}, ...)`"

    def _call_fix(self, node: cst.Call, api: DeprecatedAmpApi) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        if torch_name is None or any(arg.star == "*" for arg in node.args):
            return None
        arguments = list(node.args)
        if api.positional_names:
            positional = [index for index, arg in enumerate(arguments) if arg.keyword is None and not arg.star]
            if len(positional) > len(api.positional_names):
                return None
            for name, index in zip(api.positional_names, positional):
                arguments[index] = as_keyword(arguments[index], name)
        renamed = with_callee(node.with_changes(args=arguments), f'{torch_name}.{api.replacement.removeprefix("torch.")}')
        if api.device_argument == "positional":
            fixed = with_arguments(renamed, first=[cst.Arg(cst.SimpleString(f'"{api.device}"'))])
        else:
            fixed = with_arguments(renamed, last=[keyword("device_type", f'"{api.device}"')])
        return FixSpec(self._fix_message(api), ((node, self.ctx.code_for(fixed)),))


def _device_text(api: DeprecatedAmpApi) -> str:
    return f'"{api.device}"' if api.device_argument == "positional" else f'device_type="{api.device}"'
