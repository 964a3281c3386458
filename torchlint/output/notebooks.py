"""Findings in notebook cells, for the formats that address lines of the notebook's JSON file
(GitHub annotations, SARIF): which JSON rows hold the finding, and words naming the cell."""

from __future__ import annotations

from functools import lru_cache

from torchlint.diagnostics import Diagnostic
from torchlint.notebook import Notebook, read_notebook
from torchlint.sources import UnreadableFile, read_source


@lru_cache(maxsize=8)
def notebook_at(filename: str) -> Notebook | None:
    try:
        return read_notebook(read_source(filename).text)
    except UnreadableFile:
        return None


def json_rows(diagnostic: Diagnostic) -> tuple[int, int]:
    """The rows of the JSON file that hold the finding's first and last row in its cell."""
    notebook = notebook_at(diagnostic.filename)
    if notebook is None:
        return 1, 1
    return (
        notebook.json_row(diagnostic.cell, diagnostic.location.row),
        notebook.json_row(diagnostic.cell, diagnostic.end_location.row),
    )


def cell_label(diagnostic: Diagnostic) -> str:
    return f"cell {diagnostic.cell}, row {diagnostic.location.row}, column {diagnostic.location.column}"
