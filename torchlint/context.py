"""What a rule can ask about the file being checked, and how it reports a finding."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Protocol

import libcst as cst
from libcst._nodes.internal import CodegenState

from torchlint.analysis.attributes import SelfAttributes
from torchlint.analysis.dataflow import LocalValues
from torchlint.analysis.grad_mode import GradMode
from torchlint.analysis.guards import Guards
from torchlint.analysis.imports import ImportTable
from torchlint.analysis.loops import LoopAnalysis
from torchlint.analysis.modules import ModuleClasses
from torchlint.analysis.tensor_facts.model import TensorModel
from torchlint.analysis.values import ValueKinds
from torchlint.diagnostics import Related, Severity
from torchlint.reports import FixSpec, PendingReport, RelatedNode, ReportingRule
from torchlint.project.index import ProjectView


# pytest's and unittest's test files, whose `test_*` functions are tests.
_TEST_FILE = re.compile(r"test_.*\.py|.*_test\.py")
# Folders whose modules serve the tests.
_TEST_FOLDERS = frozenset({"test", "tests", "testing", "test_utils"})
# `__name__ == "__main__"`, either way round.
_MAIN_TEST = re.compile(r"""__name__\s*==\s*["']__main__["']|["']__main__["']\s*==\s*__name__""")
# Decorators that make a method or function run once per object or per argument.
_CACHING_DECORATORS = frozenset({
    "functools.cached_property", "functools.cache", "functools.lru_cache",
})


class TargetSettings(Protocol):
    """What rules read of the settings: the torch versions the checked code targets."""

    target_torch_version: tuple[int, ...] | None
    torch_ceiling: tuple[int, int] | None


@dataclass
class FileContext:
    path: str
    source: str
    module: cst.Module
    settings: TargetSettings
    ancestors: list[cst.CSTNode] = field(default_factory=list)
    imports: ImportTable = field(default_factory=ImportTable)
    pending: list[PendingReport] = field(default_factory=list)
    # What the names this file imports from its own project are (`torchlint/project/`).
    project: ProjectView = field(default_factory=lambda: ProjectView(None, ""))

    def __post_init__(self) -> None:
        self.values = LocalValues(self.ancestors)
        self.module_classes = ModuleClasses(self.module, self.imports, self.project)
        self.grad_mode = GradMode(self.ancestors, self.imports)
        # What kind of value an expression holds (tensor, module, number), from `tensors`.
        self.kinds = ValueKinds(self)
        self.guards = Guards(self.ancestors, self.module, self.source)
        self.self_attributes = SelfAttributes(self.ancestors)

    @cached_property
    def is_test_file(self) -> bool:
        """`test_*.py` or `*_test.py`: its `test_*` functions are tests, its helpers serve them."""
        return _TEST_FILE.fullmatch(os.path.basename(self.path)) is not None

    @cached_property
    def serves_tests(self) -> bool:
        """A test module, or a module of a test folder of the project (`tests/helpers.py`): code
        that only the test suite runs, on files and devices the suite controls."""
        inside = self.project.inside() or self.path
        return self.is_test_file or not _TEST_FOLDERS.isdisjoint(Path(inside).parts[:-1])

    @cached_property
    def tensors(self) -> TensorModel:
        """Tensor facts (`torchlint/analysis/tensor_facts/`), interpreted per function when first asked."""
        return TensorModel(self)

    @cached_property
    def loops(self) -> LoopAnalysis:
        """Loop and training-step structure (`torchlint/analysis/loops.py`), built when first asked."""
        return LoopAnalysis(self.module, self.imports, self.source, self.project)

    def close(self) -> None:
        """Drop everything this context holds. Its analyses refer back to it, so until then the
        context, they and the file's syntax tree are a cycle that only Python's cycle collector
        frees, after walking the whole tree again. The tensor facts hold such a cycle of their own
        (interpreters call back into their model), closed first."""
        tensors = vars(self).get("tensors")
        if tensors is not None:
            tensors.close()
        vars(self).clear()

    # Names -------------------------------------------------------------------------------

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        """`torch.nn.functional.softmax` for `F.softmax`, through this file's imports."""
        return self.imports.qualified_name(expr)

    def callee(self, call: cst.Call) -> str | None:
        return self.imports.qualified_name(call.func)

    def code_for(self, node: cst.CSTNode) -> str:
        """The source text of `node`, in this file's newline. An expression written over several
        lines keeps the indentation of the blocks around the walk's current node on its
        continuation lines, so that a fix replacing it leaves the lines where they were."""
        indents = [
            block.indent if block.indent is not None else self.module.default_indent
            for block in self.ancestors if isinstance(block, cst.IndentedBlock)
        ]
        if not indents or isinstance(node, cst.BaseStatement):
            return self.module.code_for_node(node)
        state = CodegenState(self.module.default_indent, self.module.default_newline, indent_tokens=indents)
        node._codegen(state)
        return "".join(state.tokens)

    # Structure ---------------------------------------------------------------------------

    @property
    def parent(self) -> cst.CSTNode | None:
        return self.ancestors[-1] if self.ancestors else None

    def enclosing_with_child(self, node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
        """Each ancestor of `node` (the node being visited), innermost first, with its child on
        the way down to `node`: which branch of an `if` the node is in."""
        chain = [*self.ancestors, node]
        return zip(reversed(chain[:-1]), reversed(chain[1:]))

    def enclosing(self, *kinds: type[cst.CSTNode]) -> cst.CSTNode | None:
        for node in reversed(self.ancestors):
            if isinstance(node, kinds):
                return node
        return None

    # The two below compare exact classes: asked for tens of thousands of nodes per file, they
    # would spend most of their time in isinstance() misses against libcst's ABC-based classes.

    def enclosing_function(self) -> cst.FunctionDef | None:
        for node in reversed(self.ancestors):
            if type(node) is cst.FunctionDef:
                return node
        return None

    def enclosing_class(self) -> cst.ClassDef | None:
        """The class whose body directly holds the enclosing function, if any."""
        function_seen = False
        for node in reversed(self.ancestors):
            node_class = type(node)
            if node_class is cst.FunctionDef:
                if function_seen:
                    return None
                function_seen = True
            elif node_class is cst.ClassDef:
                return node
        return None

    def in_library_demo(self) -> bool:
        """The point of the walk is in the `if __name__ == "__main__":` block of a module that
        another file of the project imports: a demo or self-check of the library the module is,
        not the program users run."""
        return any(isinstance(node, cst.If) and _MAIN_TEST.fullmatch(self.code_for(node.test).strip())
                   for node in self.ancestors) and self.project.importer() is not None

    def runs_once(self) -> bool:
        """The point of the walk runs once per process or per object: module-level code and the
        body of `main()` outside any loop (a `__main__` block is module-level code), an `__init__`,
        a cached property or a cached function. What such code does costs once, not per step."""
        function = self.enclosing_function()
        if function is not None and (function.name.value == "__init__" or any(
                self.qualified_name(_decorator_callee(decorator.decorator)) in _CACHING_DECORATORS
                for decorator in function.decorators)):
            return True
        if function is not None and (function.name.value != "main" or self.enclosing_class() is not None):
            return False
        return not any(isinstance(node, (cst.For, cst.While)) for node in self.ancestors)

    # Reporting ---------------------------------------------------------------------------

    def report(
        self, rule: ReportingRule, node: cst.CSTNode, message: str, fix: FixSpec | None,
        related: tuple[RelatedNode | Related, ...] = (), severity: Severity | None = None,
    ) -> None:
        self.pending.append(PendingReport(rule, node, message, fix, tuple(self.ancestors), related, severity))


def _decorator_callee(decorator: cst.BaseExpression) -> cst.BaseExpression:
    """`functools.lru_cache` for `@functools.lru_cache(maxsize=None)` and for `@functools.lru_cache`."""
    return decorator.func if isinstance(decorator, cst.Call) else decorator
