"""The shape the analysis knows for the expression under the cursor, for the language server's hover.

    shape_at(text, "train.py", settings, row=18, column=16)   # ("`q`: shape (4, 10, 32)", start, end)

The text is parsed, the innermost expression at the position found (a name, an attribute, a
call, a subscript or an operation), and one traversal asks the tensor facts about it where it
stands, as a rule would. Hovering an assignment's target shows the value assigned; inside a
Module class the file builds with different sizes, the shape each construction gives.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider

from torchlint.analysis.shape_checks import brief_code, known_sizes, show
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import parse_module, traverse
from torchlint.project.index import ProjectView

_EXPRESSIONS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation)


def shape_at(
    text: str, filename: str, settings: Settings, row: int, column: int, module: cst.Module | Diagnostic | None = None,
) -> tuple[str, CodeRange] | None:
    """What to show for the expression at 1-based `row`, 0-based `column`, and its range; None
    where the analysis knows no shape there. `module`: the text's tree, when already parsed."""
    module = parse_module(text, filename) if module is None else module
    if isinstance(module, Diagnostic):
        return None
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    target = _innermost(positions, row, column)
    if target is None:
        return None
    found: list[str] = []
    traverse(module, text, filename, settings, lambda ctx: [_Probe(ctx, target, found)], ProjectView(filename, settings.root))
    return (found[0], positions[target]) if found else None


def _innermost(positions, row: int, column: int) -> cst.CSTNode | None:
    """The smallest expression whose range holds the position."""
    best, best_size = None, None
    for node, where in positions.items():
        if not isinstance(node, _EXPRESSIONS) or not _holds(where, row, column):
            continue
        size = (where.end.line - where.start.line, where.end.column - where.start.column)
        if best_size is None or size < best_size:
            best, best_size = node, size
    return best


def _holds(where: CodeRange, row: int, column: int) -> bool:
    return (where.start.line, where.start.column) <= (row, column) <= (where.end.line, where.end.column)


class _Probe:
    """Asks the tensor facts about `target` when the traversal reaches it."""

    def __init__(self, ctx, target: cst.CSTNode, found: list[str]) -> None:
        self._ctx, self._target, self._found = ctx, target, found

    def _ask(self, node: cst.CSTNode) -> None:
        if node is not self._target:
            return
        ancestors = self._ctx.ancestors
        assigned = ancestors[-2] if len(ancestors) >= 2 and isinstance(ancestors[-1], cst.AssignTarget) else None
        value = assigned.value if isinstance(assigned, cst.Assign) else node
        tensors = self._ctx.tensors
        sizes = known_sizes(tensors.facts(value))
        shapes = [f"shape {show(sizes)}"] if sizes is not None else []
        # In a Module class built with other sizes in several places: each construction's shape.
        for made_at in tensors.construction_readings():
            built = known_sizes(tensors.facts(value))
            if built is not None and built != sizes and made_at is not None:
                shapes.append(f"shape {show(built)} as `{brief_code(self._ctx, made_at, 60)}` builds it")
        if shapes:
            self._found.append(f"`{brief_code(self._ctx, node)}`: {'; '.join(shapes)}")

    visit_Name = visit_Attribute = visit_Call = visit_Subscript = visit_BinaryOperation = _ask
