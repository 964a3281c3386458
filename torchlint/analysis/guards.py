"""Is the current point of the walk in compatibility code: code that only runs on some torch versions?

API-hygiene rules (deprecated APIs, `torch.load` without `weights_only`, checkpoint without
`use_reentrant`) must stay quiet where a library deliberately keeps the old spelling for old
torch versions. `ctx.guards.in_compat_code()` answers True inside:

- either branch of an `if` or conditional expression whose test checks the torch version or the
  presence of a torch API: `if _TORCH_GREATER_EQUAL_2_4:`, `is_torch_version("<", "2.4")`,
  `version.parse(torch.__version__) >= ...`, `hasattr(torch.amp, "GradScaler")`,
  `RequirementCache("torch>=2.4")`; both branches count, since the new-API branch never holds
  what these rules look for and the other one is the fallback;
- the statements that follow such an `if` in the same block when its body ends in `return`
  (`if TORCH_2_4: return torch.amp...` then `return torch.cuda.amp...`);
- an assignment that such an `if` right after it overrides (`weight_norm = nn.utils.weight_norm`
  then `if hasattr(nn.utils.parametrizations, "weight_norm"): weight_norm = ...`);
- a `try` whose handlers catch `ImportError`, `ModuleNotFoundError`, `AttributeError` or
  `TypeError` (the body when it is short, and the handlers), and the handlers of a
  `try` that catches `Exception` or everything: `try: new() except AttributeError: old()`;
- `if TYPE_CHECKING:` blocks, which never run.

Verdicts about one `if` or `try` are cached. The question is only asked for candidate findings,
so nothing here runs for most nodes.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.dataflow import assigned_names, target_names
from torchlint.analysis.names import dotted_name

_VERSION_TEST = re.compile(
    r"torch\w*version|version\w*torch|torch\.__version__|torch\w*(greater|less|_ge_|_gt_|_le_|_lt_|_eq_)"
    r"|torch_?\d|hasattr\(\s*(torch|functorch|F|nn)\b[\w.]*\s*,"
    r"|RequirementCache\(\s*f?['\"](torch|lightning)|compare_version\(\s*['\"]torch|\bTYPE_CHECKING\b",
    re.IGNORECASE,
)
# Handlers for these exceptions mark a `try` as an API-availability probe.
_PROBE_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})
_BROAD_EXCEPTIONS = frozenset({"Exception", "BaseException"})
# A probing `try` body longer than this is ordinary code that happens to catch those errors.
_MAX_PROBE_BODY = 3


def _caught_names(handler: cst.ExceptHandler) -> set[str] | None:
    """The exception class names a handler catches; None for a bare `except:`."""
    if handler.type is None:
        return None
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    names = set()
    for kind in kinds:
        expr = kind.value if isinstance(kind, cst.Element) else kind
        written = dotted_name(expr)
        if written is not None:
            names.add(written.rsplit(".", 1)[-1])
    return names


def _ends_in_return(block: cst.BaseSuite) -> bool:
    statements = getattr(block, "body", ())
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, cst.Return) for small in last.body)
    return False


class Guards:
    """Answers `in_compat_code()` for the current point of the walk."""

    def __init__(self, ancestors: list[cst.CSTNode], module: cst.Module) -> None:
        self._ancestors = ancestors
        self._module = module
        self._version_tests: dict[int, bool] = {}

    def in_compat_code(self) -> bool:
        """True in version-gated branches, try/except fallbacks and TYPE_CHECKING blocks."""
        ancestors = self._ancestors
        for index, node in enumerate(ancestors):
            child = ancestors[index + 1] if index + 1 < len(ancestors) else None
            if isinstance(node, (cst.If, cst.IfExp)):
                if self.is_version_test(node.test):
                    return True
            elif isinstance(node, cst.Try):
                if child is not None and self._fallback_part(node, child):
                    return True
            elif isinstance(node, (cst.IndentedBlock, cst.Module)) and child is not None:
                if self._after_gated_return(node, child) or self._overridden_by_gate(node, child):
                    return True
        return False

    def is_version_test(self, test: cst.BaseExpression) -> bool:
        """The expression checks the torch version, a torch API's presence, or TYPE_CHECKING."""
        key = id(test)
        verdict = self._version_tests.get(key)
        if verdict is None:
            verdict = bool(_VERSION_TEST.search(self._module.code_for_node(test)))
            self._version_tests[key] = verdict
        return verdict

    def _fallback_part(self, node: cst.Try, child: cst.CSTNode) -> bool:
        caught: set[str] = set()
        catches_everything = False
        for handler in node.handlers:
            names = _caught_names(handler)
            if names is None:
                catches_everything = True
            else:
                caught |= names
        probe = bool(caught & _PROBE_EXCEPTIONS)
        if isinstance(child, cst.ExceptHandler):
            return probe or catches_everything or bool(caught & _BROAD_EXCEPTIONS)
        if child is node.body:
            return probe and len(node.body.body) <= _MAX_PROBE_BODY
        return False

    def _overridden_by_gate(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        if not isinstance(child, cst.SimpleStatementLine):
            return False
        statements = list(block.body)
        index = next((i for i, statement in enumerate(statements) if statement is child), None)
        if index is None or index + 1 >= len(statements):
            return False
        following = statements[index + 1]
        if not isinstance(following, cst.If) or not self.is_version_test(following.test):
            return False
        assigned = {
            name
            for small in child.body if isinstance(small, cst.Assign)
            for target in small.targets for name in target_names(target.target)
        }
        return bool(assigned & assigned_names(following))

    def _after_gated_return(self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> bool:
        for statement in block.body:
            if statement is child:
                return False
            if (
                isinstance(statement, cst.If)
                and statement.orelse is None
                and _ends_in_return(statement.body)
                and self.is_version_test(statement.test)
            ):
                return True
        return False
