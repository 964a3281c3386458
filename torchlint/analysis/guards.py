"""Is the current point of the walk in compatibility code: code that only runs on some torch versions?

API-hygiene rules (deprecated APIs, `torch.load` without `weights_only`, checkpoint without
`use_reentrant`) must stay quiet where a library deliberately keeps the old spelling for old
torch versions. `ctx.guards.in_compat_code(node)` answers True inside:

- either branch of an `if` or conditional expression whose test checks the torch version or the
  presence of a torch API: `if _TORCH_GREATER_EQUAL_2_4:`, `if WITH_PT24:`, `is_torch_version("<", "2.4")`,
  `version.parse(torch.__version__) >= ...`, `hasattr(torch.amp, "GradScaler")`,
  `RequirementCache("torch>=2.4")`, and in a file that reads `torch.__version__` a local
  version compared with a tuple (`version = parse(torch.__version__)`, then
  `if version < (1, 12, 0):`); both branches count, since the new-API branch does not hold
  the deprecated spelling and the other one is the fallback;
- the statements that follow such an `if` in the same block when its body ends in `return`
  (`if TORCH_2_4: return torch.amp...` then `return torch.cuda.amp...`), also through a `try`,
  a `with` or an inner `if` whose every path returns or raises (PyG's `if WITH_PT24: try: with
  open(f): return torch.load(f, weights_only=True) except ...: raise` then the old load);
- an assignment that such an `if` right after it overrides (`weight_norm = nn.utils.weight_norm`
  then `if hasattr(nn.utils.parametrizations, "weight_norm"): weight_norm = ...`);
- a `try` whose handlers catch `ImportError`, `ModuleNotFoundError`, `AttributeError` or
  `TypeError` (the body when it is short, and the handlers), and the handlers of a
  `try` that catches `Exception` or everything: `try: new() except AttributeError: old()`;
- `if TYPE_CHECKING:` blocks, which never run.

With `fallback_only=True` only the code that older torch runs counts (`holds_on_newer_torch`
tells the branches apart): for findings that can sit in the new-version branch too.
`ctx.guards.in_version_gate(node)` asks the narrower question (gated `if` branches and
TYPE_CHECKING blocks only) for rules outside API hygiene. Verdicts about one `if` test are
cached; the questions are only asked for candidate findings.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.dataflow import assigned_names, target_names
from torchlint.analysis.names import dotted_name, suite_statements

_VERSION_TEST = re.compile(
    r"torch\w*version|version\w*torch|torch\.__version__|torch\w*(greater|less|_ge_|_gt_|_le_|_lt_|_eq_)"
    r"|torch_?\d|(?<![a-z])pt_?(\d_\d|\d\d)|hasattr\(\s*(torch|functorch|F|nn)\b[\w.]*\s*,|sys\.version_info"
    r"|RequirementCache\(\s*f?['\"](torch|lightning)|compare_version\(\s*['\"]torch|\bTYPE_CHECKING\b",
    re.IGNORECASE,
)
# Handlers for these exceptions mark a `try` as an API-availability probe.
# A version held in a local name compared with a tuple of integers (`version < (1, 12, 0)`): a
# torch version test in a file that reads `torch.__version__`.
_LOCAL_VERSION_COMPARISON = re.compile(r"\bversion\w*\s*[<>]=?\s*\(\s*\d+\s*,\s*\d+", re.IGNORECASE)
_READS_TORCH_VERSION = re.compile(r"torch\.__version__|torch\.version\.__version__")
_PROBE_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})
_BROAD_EXCEPTIONS = frozenset({"Exception", "BaseException"})
# A probing `try` body longer than this is ordinary code that happens to catch those errors.
_MAX_PROBE_BODY = 3
_TYPE_CHECKING = re.compile(r"\bTYPE_CHECKING\b")
# A comparison operator written in a version check: True when it holds on newer versions.
_COMPARISONS = {">=": True, ">": True, "<": False, "<=": False}
_OPERATOR_NEWER = {
    cst.GreaterThanEqual: True, cst.GreaterThan: True, cst.LessThan: False, cst.LessThanEqual: False,
}
_NEWER_WORD = re.compile(r"greater|newer|at_?least|_ge(_|$)|_gt(_|$)|(^|_)ge_|torch_?\d|with_pt_?\d", re.IGNORECASE)
_OLDER_WORD = re.compile(r"less|older|below|_lt(_|$)|_le(_|$)|(^|_)lt_", re.IGNORECASE)


def _polarity_of_word(name: str) -> bool | None:
    """`_TORCH_GREATER_EQUAL_2_4` holds on newer torch, `_TORCH_LESS_THAN_2_0` on older."""
    if _OLDER_WORD.search(name):
        return False
    if _NEWER_WORD.search(name):
        return True
    return None


def caught_names(handler: cst.ExceptHandler) -> set[str] | None:
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
    """Every path through the block returns, or raises where another returns: `return new()`, a
    `try` whose body and handlers return (`return load(f, weights_only=True)`, or a warning then
    the unsafe load) or raise, within a `with` or both branches of an `if`. A block that only
    raises (`if not TORCH_2: raise ImportError`) guards what follows, and is not a fallback."""
    return _leaves(block) is True


def _leaves(block: cst.BaseSuite) -> bool | None:
    """None when some path falls through the block; else whether some path returns."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else ()
    return _statement_leaves(statements[-1]) if statements else None


def _statement_leaves(last: cst.BaseStatement) -> bool | None:
    if isinstance(last, cst.SimpleStatementLine):
        if any(isinstance(small, cst.Return) for small in last.body):
            return True
        return False if any(isinstance(small, cst.Raise) for small in last.body) else None
    if isinstance(last, cst.With):
        return _leaves(last.body)
    if isinstance(last, cst.If):
        orelse = last.orelse
        otherwise = _statement_leaves(orelse) if isinstance(orelse, cst.If) else \
            _leaves(orelse.body) if orelse is not None else None
        branches = [_leaves(last.body), otherwise]
    elif isinstance(last, cst.Try) and last.orelse is None and last.finalbody is None:
        branches = [_leaves(last.body), *(_leaves(handler.body) for handler in last.handlers)]
    else:
        return None
    return None if None in branches else any(branches)


class Guards:
    """Answers `in_compat_code()` for the current point of the walk."""

    def __init__(self, ancestors: list[cst.CSTNode], module: cst.Module, source: str) -> None:
        self._ancestors = ancestors
        self._module = module
        self._reads_torch_version = _READS_TORCH_VERSION.search(source) is not None
        self._version_tests: dict[int, bool] = {}

    def in_compat_code(self, node: cst.CSTNode | None = None, *, fallback_only: bool = False) -> bool:
        """True in version-gated branches, try/except fallbacks and TYPE_CHECKING blocks.

        `node` is the node about to be reported (the walk's ancestors stop at its parent). With
        `fallback_only`, only the code that runs on *older* torch counts: the branch of a gate that
        the old version takes (both when that cannot be told), the handlers of a `try`, the code
        after `if <new torch>: return ...`. Rules whose finding can sit in the new-version branch
        too (`torch.load` without `weights_only` next to a new `mmap=True`) ask for that.
        """
        chain = [*self._ancestors, node] if node is not None else self._ancestors
        for index, current in enumerate(chain):
            child = chain[index + 1] if index + 1 < len(chain) else None
            if isinstance(current, (cst.If, cst.IfExp)):
                if child is not None and child is not current.test and self._gated_branch(current, child, fallback_only):
                    return True
            elif isinstance(current, cst.Try):
                if child is not None and self._fallback_part(current, child, fallback_only):
                    return True
            elif isinstance(current, (cst.IndentedBlock, cst.Module)) and child is not None:
                if self._after_gated_return(current, child, fallback_only) or self._overridden_by_gate(current, child):
                    return True
        return False

    def in_version_gate(self, node: cst.CSTNode | None = None) -> bool:
        """True inside either branch of a version-gated `if` or conditional expression, or in an
        `if TYPE_CHECKING:` block: the narrower question for rules outside API hygiene, whose
        findings a `try`/`except` around them does not excuse."""
        chain = [*self._ancestors, node] if node is not None else self._ancestors
        for index, current in enumerate(chain):
            child = chain[index + 1] if index + 1 < len(chain) else None
            if isinstance(current, (cst.If, cst.IfExp)) and child is not None and child is not current.test:
                if self._gated_branch(current, child, fallback_only=False):
                    return True
        return False

    def _gated_branch(self, gate: cst.If | cst.IfExp, branch: cst.CSTNode, fallback_only: bool) -> bool:
        if not self.is_version_test(gate.test):
            return False
        in_body = branch is gate.body
        if _TYPE_CHECKING.search(self._module.code_for_node(gate.test)):
            return in_body  # the body never runs; an `else` always does
        if not fallback_only:
            return True
        newer = self.holds_on_newer_torch(gate.test)
        return newer is None or newer != in_body

    def is_version_test(self, test: cst.BaseExpression) -> bool:
        """The expression checks the torch version, a torch API's presence, or TYPE_CHECKING."""
        key = id(test)
        verdict = self._version_tests.get(key)
        if verdict is None:
            code = self._module.code_for_node(test)
            verdict = bool(_VERSION_TEST.search(code)) or (
                self._reads_torch_version and _LOCAL_VERSION_COMPARISON.search(code) is not None)
            self._version_tests[key] = verdict
        return verdict

    def _fallback_part(self, node: cst.Try, child: cst.CSTNode, fallback_only: bool) -> bool:
        caught: set[str] = set()
        catches_everything = False
        for handler in node.handlers:
            names = caught_names(handler)
            if names is None:
                catches_everything = True
            else:
                caught |= names
        probe = bool(caught & _PROBE_EXCEPTIONS)
        if isinstance(child, cst.ExceptHandler):
            return probe or catches_everything or bool(caught & _BROAD_EXCEPTIONS)
        if child is node.body and not fallback_only:
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
        return bool(assigned & assigned_names(suite_statements(following.body)))

    def _after_gated_return(
        self, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode, fallback_only: bool
    ) -> bool:
        for statement in block.body:
            if statement is child:
                return False
            if (
                isinstance(statement, cst.If)
                and statement.orelse is None
                and _ends_in_return(statement.body)
                and self.is_version_test(statement.test)
                and (not fallback_only or self.holds_on_newer_torch(statement.test) is not False)
            ):
                return True
        return False

    def holds_on_newer_torch(self, test: cst.BaseExpression) -> bool | None:
        """True when a version test holds on newer torch (`_TORCH_GREATER_EQUAL_2_4`,
        `is_torch_version(">=", ...)`, `hasattr(torch.amp, ...)`), False when on older
        (`is_torch_version("<", ...)`, `not _TORCH_GREATER_EQUAL_2_4`), None when unknown."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.holds_on_newer_torch(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            sides = {self.holds_on_newer_torch(side) for side in (test.left, test.right) if self.is_version_test(side)}
            return sides.pop() if len(sides) == 1 else None
        if isinstance(test, cst.Call):
            name = (dotted_name(test.func) or "").rsplit(".", 1)[-1]
            if name == "hasattr":
                return True
            for arg in test.args:
                if isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value in _COMPARISONS:
                    return _COMPARISONS[arg.value.evaluated_value]
                if isinstance(arg.value, cst.SimpleString) and "torch" in arg.value.value:
                    found = re.search(r"(>=|<=|>|<)", arg.value.value)
                    if found:
                        return _COMPARISONS[found.group(1)]
            return _polarity_of_word(name)
        if isinstance(test, (cst.Name, cst.Attribute)):
            return _polarity_of_word(dotted_name(test) or "")
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            operator = type(test.comparisons[0].operator)
            newer = _OPERATOR_NEWER.get(operator)
            if newer is None:
                return None
            left_is_version = self.is_version_test(test.left)
            if left_is_version == self.is_version_test(test.comparisons[0].comparator):
                return None
            return newer if left_is_version else not newer
        return None
