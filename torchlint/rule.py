"""The base class every rule derives from.

A rule is a small class in `torchlint/rules/`: its code, name and metadata as class attributes,
its docstring as its documentation, and `visit_<Node>` / `leave_<Node>` methods named after libcst
node classes. The engine calls those methods during its single traversal of each file; a rule
reads shared facts (imports, the enclosing function, what a name was assigned) from `self.ctx`
and calls `self.report(...)` for each finding.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from torchlint.analysis.shape_checks import brief_code
from torchlint.diagnostics import Applicability, Related, Severity
from torchlint.reports import FixSpec, RelatedNode
from torchlint.rules import rule_url

if TYPE_CHECKING:
    from torchlint.context import FileContext

_DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity]
    default_enabled: ClassVar[bool] = True
    # The applicability of the fixes this rule offers, or None when it offers none.
    fix_applicability: ClassVar[Applicability | None] = None
    # Reported only by `--runtime` (no static visitor methods).
    runtime_only: ClassVar[bool] = False

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx

    def report(
        self, node: cst.CSTNode, message: str, *, fix: FixSpec | None = None,
        related: Sequence[RelatedNode | Related] = (), severity: Severity | None = None,
    ) -> None:
        """Report a finding at `node`; `related` names the other places it rests on, each shown
        as a note (a `RelatedNode` in this file, or a `Related` already located elsewhere);
        `severity`, where this finding is less (or more) than the rule's usual one."""
        self.ctx.report(self, node, message, fix, tuple(related), severity)

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring split at its `## Heading` lines."""
        sections: dict[str, str] = {}
        for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", cls.doc(), re.M | re.S):
            sections[match.group(1).strip()] = match.group(2).strip()
        return sections

    @classmethod
    def url(cls) -> str:
        return rule_url(cls.code)

    @classmethod
    def missing_doc_sections(cls) -> list[str]:
        present = cls.doc_sections()
        return [section for section in _DOC_SECTIONS if section not in present]


def each_construction(visit: Callable) -> Callable:
    """For a visit method of a rule that checks sizes: where it reports nothing from the tensor
    facts' reading of its node, run it again with the reading of each construction of the node's
    Module class (`TensorModel.construction_readings`: the class built as `ResBlock(16, 32)` and
    as `ResBlock(64, 16)`), until one reports; that finding names the construction."""

    @functools.wraps(visit)
    def visit_each(self: Rule, node: cst.CSTNode) -> None:
        pending = self.ctx.pending
        before = len(pending)
        visit(self, node)
        tensors = vars(self.ctx).get("tensors")  # not built: the visit asked nothing of it
        if len(pending) > before or tensors is None:
            return
        for made_at in tensors.construction_readings():
            visit(self, node)
            if len(pending) > before:
                if made_at is not None:
                    report = pending[-1]
                    report.related = (*report.related, construction_note(self.ctx, made_at))
                return

    return visit_each


def construction_note(ctx: "FileContext", made_at: cst.Call) -> RelatedNode:
    """The note on a finding of one construction's reading: where that construction is."""
    return RelatedNode(made_at, f"with the sizes of this construction, `{brief_code(ctx, made_at, 60)}`")
