"""Whether autograd is recording at the current point of the walk.

Grad mode is switched by context managers used as `with` items (`torch.no_grad()`,
`torch.inference_mode()`, `torch.set_grad_enabled(False)`, `torch.enable_grad()`) and by the same
objects used as function decorators (`@torch.no_grad()`, `@torch.inference_mode`). The answer
comes from the enclosing `with` statements and the decorators of the enclosing function, read off
the walk's ancestors, so the innermost switch wins. The search stops at the enclosing function
(or lambda): its body runs in whatever mode its caller is in, which this file may not show.
"""

from __future__ import annotations

import enum

import libcst as cst

from torchlint.analysis.imports import ImportTable
from torchlint.analysis.names import argument, dotted_name


class GradState(enum.Enum):
    DISABLED = "disabled"
    ENABLED = "enabled"  # explicitly re-enabled (`torch.enable_grad()`, `set_grad_enabled(True)`)
    DEFAULT = "default"  # nothing in this function switches it: the caller's mode (module code: on)
    UNKNOWN = "unknown"  # switched by a value or a helper that cannot be read statically


_AUTOGRAD_PREFIXES = ("torch.", "torch.autograd.", "torch.autograd.grad_mode.")
_DISABLE = frozenset(f"{prefix}{name}" for prefix in _AUTOGRAD_PREFIXES for name in ("no_grad", "inference_mode"))
_ENABLE = frozenset(f"{prefix}enable_grad" for prefix in _AUTOGRAD_PREFIXES)
_SET_ENABLED = frozenset(f"{prefix}set_grad_enabled" for prefix in _AUTOGRAD_PREFIXES)
_INFERENCE = frozenset(f"{prefix}inference_mode" for prefix in _AUTOGRAD_PREFIXES)
# Helpers whose names say they switch grad mode (`maybe_no_grad()`, `self.inference_ctx()`,
# an imported `smart_inference_mode()`).
_GRAD_WORDS = ("no_grad", "inference", "grad_enabled", "enable_grad")


def _constant_bool(expr: cst.BaseExpression | None) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


class GradMode:
    """Answers `state()` / `is_disabled()` for the node being visited."""

    def __init__(self, ancestors: list[cst.CSTNode], imports: ImportTable) -> None:
        self._ancestors = ancestors
        self._imports = imports
        self._effects: dict[int, GradState | None] = {}

    # Queries -----------------------------------------------------------------------------

    def is_disabled(self) -> bool:
        """True when grad mode is certainly off here (inside `with torch.no_grad():` and the like)."""
        return self.state() is GradState.DISABLED

    def state(self) -> GradState:
        ancestors = self._ancestors
        for index in range(len(ancestors) - 1, -1, -1):
            node = ancestors[index]
            child = ancestors[index + 1] if index + 1 < len(ancestors) else None
            if isinstance(node, cst.With):
                if child is node.body:
                    effect = self._cached(node, self._with_effect)
                    if effect is not None:
                        return effect
            elif isinstance(node, cst.FunctionDef):
                if child is node.body:
                    effect = self._cached(node, self._decorator_effect)
                    return effect if effect is not None else GradState.DEFAULT
            elif isinstance(node, cst.Lambda):
                # A lambda's direct children are its parameters and its body expression.
                if child is None or child is node.body:
                    return GradState.DEFAULT
        return GradState.DEFAULT

    def switch_effect(self, expr: cst.BaseExpression) -> GradState | None:
        """What entering `expr` (a `with` item or a decorator) does to grad mode; None: nothing."""
        call = expr if isinstance(expr, cst.Call) else None
        target = call.func if call is not None else expr
        qualified = self._imports.qualified_name(target)
        if qualified is None or not qualified.startswith("torch."):
            # A helper of the project or a library (`@smart_inference_mode()`): judged by its name.
            written = qualified or dotted_name(target) or ""
            last = written.rsplit(".", 1)[-1].lower()
            if isinstance(expr, cst.IfExp):
                branches = (self.switch_effect(expr.body), self.switch_effect(expr.orelse))
                return None if branches == (None, None) else GradState.UNKNOWN
            return GradState.UNKNOWN if any(word in last for word in _GRAD_WORDS) else None
        if qualified in _ENABLE:
            return GradState.ENABLED
        if qualified in _SET_ENABLED:
            if call is None:
                return None
            mode = _constant_bool(argument(call, 0, "mode"))
            if mode is None:
                return GradState.UNKNOWN
            return GradState.ENABLED if mode else GradState.DISABLED
        if qualified in _DISABLE:
            if call is not None and qualified in _INFERENCE and call.args:
                mode = _constant_bool(argument(call, 0, "mode"))
                if mode is None:
                    return GradState.UNKNOWN
                # `inference_mode(False)` turns grad mode back on.
                return GradState.DISABLED if mode else GradState.ENABLED
            return GradState.DISABLED
        return None

    # Helpers -----------------------------------------------------------------------------

    def _cached(self, node: cst.CSTNode, compute) -> GradState | None:
        key = id(node)
        if key not in self._effects:
            self._effects[key] = compute(node)
        return self._effects[key]

    def _with_effect(self, node: cst.With) -> GradState | None:
        return self._combined(item.item for item in node.items)

    def _decorator_effect(self, node: cst.FunctionDef) -> GradState | None:
        return self._combined(decorator.decorator for decorator in node.decorators)

    def _combined(self, switches) -> GradState | None:
        # Several switches in one statement: the last entered (innermost) wins.
        result = None
        for expr in switches:
            effect = self.switch_effect(expr)
            if effect is not None:
                result = effect
        return result
