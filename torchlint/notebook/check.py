"""Checking a notebook: its code cells as one Python text, without the cells that do not parse."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic
from torchlint.engine import check_source, file_error, syntax_error
from torchlint.notebook import CodeCell, python_view, read_notebook
from torchlint.notebook.ipython import mask_cell


def parses(text: str) -> cst.Module | None:
    try:
        return cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None


def unparsable_cells(cells: tuple[CodeCell, ...]) -> dict[int, tuple[str, cst.ParserSyntaxError | None]]:
    """The cells that do not parse on their own: number -> (masked text, libcst's error)."""
    found = {}
    for cell in cells:
        python = mask_cell(cell.source).python
        try:
            cst.parse_module(python)
        except cst.ParserSyntaxError as error:
            found[cell.number] = (python, error)
        except RecursionError:
            found[cell.number] = (python, None)
    return found


def broken_cells(cells: tuple[CodeCell, ...], filename: str) -> dict[int, Diagnostic]:
    """The TL901 of each cell that does not parse on its own, by cell number (rows in the cell)."""
    found = {}
    for number, (python, error) in unparsable_cells(cells).items():
        if error is None:
            diagnostic = file_error("TL901", filename, "SyntaxError: too deeply nested to parse")
        else:
            diagnostic = syntax_error(python, filename, error)
        found[number] = replace(diagnostic, cell=number)
    return found


def notebook_view(cells: tuple[CodeCell, ...], filename: str):
    """The Python view of the cells without the cells that do not parse, its libcst tree (None
    when it still does not parse) and the TL901 of each cell left out."""
    view = python_view(cells)
    module = parses(view.text)
    if module is not None:
        return view, module, {}
    broken = broken_cells(cells, filename)
    view = python_view(cells, broken=frozenset(broken))
    return view, parses(view.text) if broken else None, broken


def check_notebook(raw: str, filename: str, settings: Settings) -> list[Diagnostic]:
    """Every finding in a notebook's code cells, located by cell and row within the cell."""
    notebook = read_notebook(raw)
    view, module, broken = notebook_view(notebook.cells, filename)
    diagnostics = [view.locate(d) for d in check_source(view.text, filename, settings, module)]
    return sorted(diagnostics + list(broken.values()), key=Diagnostic.sort_key)
