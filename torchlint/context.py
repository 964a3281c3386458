"""What a rule can ask about the file being checked, and how it reports a finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

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
from torchlint.diagnostics import Applicability, Related

if TYPE_CHECKING:
    from torchlint.config import Settings
    from torchlint.rule import Rule


@dataclass(frozen=True)
class FixSpec:
    """A fix described on the tree: replace each node's source text; insert lines before a row.

    The engine turns it into text edits once positions are known (only for files with findings).
    """

    message: str
    replacements: tuple[tuple[cst.CSTNode, str], ...]
    applicability: Applicability = Applicability.SAFE
    # (1-based row, text): text inserted at the start of that row, e.g. a missing import.
    insertions: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class RelatedNode:
    """A place in this file that a finding rests on; the engine finds its position."""

    node: cst.CSTNode
    message: str


@dataclass
class PendingReport:
    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: FixSpec | None
    # The ancestors of the node being visited when the report was made: where to look for the
    # statement that holds `node` when computing its position.
    chain: tuple[cst.CSTNode, ...]
    # Notes on other places, in the order a reader follows them.
    related: tuple[RelatedNode | Related, ...] = ()


@dataclass
class FileContext:
    path: str
    source: str
    module: cst.Module
    settings: "Settings"
    ancestors: list[cst.CSTNode] = field(default_factory=list)
    imports: ImportTable = field(default_factory=ImportTable)
    pending: list[PendingReport] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.values = LocalValues(self.ancestors)
        self.module_classes = ModuleClasses(self.module, self.imports)
        self.grad_mode = GradMode(self.ancestors, self.imports)
        # What kind of value an expression holds (tensor, module, number, device) and where a
        # tensor lives; a walk participant listed right after `values` (see analysis/values.py).
        self.kinds = ValueKinds(self)
        self.guards = Guards(self.ancestors, self.module)
        self.self_attributes = SelfAttributes(self.ancestors)

    @cached_property
    def tensors(self) -> TensorModel:
        """Tensor facts (`torchlint/analysis/tensor_facts/`), interpreted per function when first asked."""
        return TensorModel(self)

    @cached_property
    def loops(self) -> LoopAnalysis:
        """Loop and training-step structure (`torchlint/analysis/loops.py`), built when first asked."""
        return LoopAnalysis(self.module, self.imports, self.source)

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

    def enclosing(self, *kinds: type[cst.CSTNode]) -> cst.CSTNode | None:
        for node in reversed(self.ancestors):
            if isinstance(node, kinds):
                return node
        return None

    def enclosing_function(self) -> cst.FunctionDef | None:
        return self.enclosing(cst.FunctionDef)  # type: ignore[return-value]

    def enclosing_class(self) -> cst.ClassDef | None:
        """The class whose body directly holds the enclosing function, if any."""
        function_seen = False
        for node in reversed(self.ancestors):
            if isinstance(node, cst.FunctionDef):
                if function_seen:
                    return None
                function_seen = True
            elif isinstance(node, cst.ClassDef):
                return node
        return None

    # Reporting ---------------------------------------------------------------------------

    def report(
        self, rule: "Rule", node: cst.CSTNode, message: str, fix: FixSpec | None,
        related: tuple[RelatedNode | Related, ...] = (),
    ) -> None:
        self.pending.append(PendingReport(rule, node, message, fix, tuple(self.ancestors), related))
