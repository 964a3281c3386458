"""What a rule hands to the engine: a finding on the tree (`PendingReport`), the fix it offers
(`FixSpec`) and the other places it rests on (`RelatedNode`), and what the engine reads of the rule that made it (`ReportingRule`).

Rules, the file context and the engine import these; this module imports none of them, so the
context does not need the rule or configuration modules (which need the context's types).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import libcst as cst

from torchlint.diagnostics import Applicability, Related, Severity


class ReportingRule(Protocol):
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]


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
    """A place in the checked file that a finding rests on; the engine finds its position."""

    node: cst.CSTNode
    message: str


@dataclass
class PendingReport:
    rule: ReportingRule
    node: cst.CSTNode
    message: str
    fix: FixSpec | None
    # The ancestors of the node being visited when the report was made: where to look for the
    # statement that holds `node` when computing its position.
    chain: tuple[cst.CSTNode, ...]
    # Notes on other places, in the order a reader follows them.
    related: tuple[RelatedNode | Related, ...] = ()
    severity: Severity | None = None  # None: the rule's
