"""Checking a notebook: its code cells as one Python text, without the cells that do not parse."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.config import UNSUPPRESSIBLE, Settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import check_source, parse_module
from torchlint.notebook import CodeCell, PythonView, python_view, read_notebook
from torchlint.notebook.ipython import mask_cell
from torchlint.project.index import ProjectView
from torchlint.suppressions import NO_SUPPRESSIONS, Suppressions, may_hold_torchlint_noqa, read_suppressions


def parses(text: str, filename: str) -> cst.Module | None:
    """The tree of `text`, or None where the engine's parser would report TL901/TL902."""
    parsed = parse_module(text, filename)
    return None if isinstance(parsed, Diagnostic) else parsed


def broken_cells(cells: tuple[CodeCell, ...], filename: str) -> dict[int, Diagnostic]:
    """The TL901 (or TL902) of each cell that does not parse on its own, by cell number (rows in
    the cell)."""
    found = {}
    for cell in cells:
        parsed = parse_module(mask_cell(cell.source).python, filename)
        if isinstance(parsed, Diagnostic):
            found[cell.number] = replace(parsed, cell=cell.number)
    return found


def notebook_view(cells: tuple[CodeCell, ...], filename: str):
    """The Python view of the cells without the cells that do not parse, its libcst tree (None
    when it still does not parse) and the TL901 of each cell left out."""
    view = python_view(cells)
    module = parses(view.text, filename)
    if module is not None:
        return view, module, {}
    broken = broken_cells(cells, filename)
    view = python_view(cells, broken=frozenset(broken))
    return view, parses(view.text, filename) if broken else None, broken


def check_view(view: PythonView, filename: str, settings: Settings, module: cst.Module | None = None,
               project: ProjectView | None = None) -> list[Diagnostic]:
    """The findings of a notebook's Python view (in its rows). A `# torchlint: noqa` at column 0
    of a cell silences that cell only: cells are snippets run one by one, not one file."""
    found = check_source(view.text, filename, settings, module, project, file_level_noqa=False)
    scopes = [
        read_suppressions(cell.python) if may_hold_torchlint_noqa(cell.python) else NO_SUPPRESSIONS
        for cell in view.cells
    ]
    return [d for d in found if not _silenced_in_cell(d, scopes[view.position(d.location.row)])]


def _silenced_in_cell(diagnostic: Diagnostic, cell: Suppressions) -> bool:
    return diagnostic.code not in UNSUPPRESSIBLE and (cell.whole_file or diagnostic.code in cell.file_codes)


def check_notebook(raw: str, filename: str, settings: Settings, project: ProjectView | None = None) -> list[Diagnostic]:
    """Every finding in a notebook's code cells, located by cell and row within the cell
    (`project`: the notebook's view of the project it imports from)."""
    notebook = read_notebook(raw)
    view, module, broken = notebook_view(notebook.cells, filename)
    diagnostics = [view.locate(d) for d in check_view(view, filename, settings, module, project)]
    return sorted(diagnostics + list(broken.values()), key=Diagnostic.sort_key)
