"""`--runtime nb.ipynb`: the notebook's code cells run in order in one namespace, as a kernel runs
them; IPython commands (magics, shell escapes, help) are skipped with a one-line note each; a
cell that raises stops the run, as a script stops.

Each cell is compiled under the notebook's path with its rows in the notebook's Python view
(notebook/__init__.py): the rows its findings are probed at, and the rows the parent reads events
at before it maps every verdict back to (cell, row). This module never imports torch.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import TracebackType

from torchlint.diagnostics import Diagnostic
from torchlint.notebook import CodeCell, PythonView, python_view, read_notebook
from torchlint.notebook.ipython import MaskedCell
from torchlint.runtime.probes import Site, compile_probed
from torchlint.sources import LINE_BREAK, UnreadableFile, read_source


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def _cells(path: str) -> tuple[tuple[CodeCell, ...], PythonView]:
    cells = read_notebook(read_source(path).text).cells
    return cells, python_view(cells)


def _remember_rows(path: str, text: str) -> None:
    """Let `linecache` (tracebacks, the parent's column conversion) read the notebook by rows of
    its Python view instead of the JSON file."""
    lines = [line + "\n" for line in LINE_BREAK.split(text)]
    linecache.cache[path] = (len(text), None, lines, path)


# The parent ------------------------------------------------------------------------------------


class NotebookFindings:
    """Moves the notebook's findings into the rows of its Python view for the run, and the
    verdicts back into cells."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)
        try:
            _, self.view = _cells(path)
        except UnreadableFile as error:
            raise ValueError(f"{path}: {error}") from None
        _remember_rows(self.path, self.view.text)

    def _ours(self, diagnostic: Diagnostic) -> bool:
        return os.path.realpath(diagnostic.filename) == self.path

    def for_run(self, findings: list[Diagnostic]) -> list[Diagnostic]:
        return [self.view.in_view(d) if self._ours(d) and d.cell is not None else d for d in findings]

    def by_cell(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        return [self.view.locate(d) if self._ours(d) and d.cell is None else d for d in diagnostics]


# The child -------------------------------------------------------------------------------------


def _assigned(masked: MaskedCell, row: int, column: int) -> bool:
    """Is the command at (row, column) the value of an assignment (`x = !ls`)?"""
    return bool(LINE_BREAK.split(masked.python)[row - 1][: column - 1].strip())


def _runnable(masked: MaskedCell) -> str:
    """The cell's Python with each masked command replaced: `pass` for a statement, `None` for
    the value of `x = !cmd` (the command would have run to the end of its row)."""
    rows = LINE_BREAK.split(masked.python)
    for command in masked.commands:
        before = rows[command.row - 1][: command.column - 1]
        rows[command.row - 1] = before + ("None" if _assigned(masked, command.row, command.column) else "pass")
    return "\n".join(rows)


def _notes(masked: MaskedCell) -> list[tuple[int, str]]:
    """(row, what happened) for each IPython command of a cell."""
    notes = []
    for command in masked.commands:
        text = f"`{command.text.strip()}`"
        if command.row == 1 and command.text.startswith("%%"):
            notes.append((1, f"{text} ignored, its body run as Python" if masked.runs_as_python else f"skipped the cell: {text}"))
        else:
            assigned = _assigned(masked, command.row, command.column)
            notes.append((command.row, f"skipped {text}" + ("; None assigned instead" if assigned else "")))
    return notes


def _display(*objects, **_options) -> None:
    """IPython's `display`, which a kernel provides without an import: the plain-text form."""
    for value in objects:
        print(repr(value))


def _note(path: str, number: int, where: str, text: str) -> None:
    sys.stderr.write(f"torchlint: {path}: cell {number}{where}: {text}\n")


def _failed_at(error: BaseException, path: str, view: PythonView) -> str:
    """`cell N, row R` where the error left the notebook's own code."""
    row = None
    traceback: TracebackType | None = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == path:
            row = traceback.tb_lineno
        traceback = traceback.tb_next
    if row is None and isinstance(error, SyntaxError) and error.filename == path:
        row = error.lineno
    if row is None:
        return ""
    position = view.position(row)
    return f", row {row - view.first_rows[position] + 1}"


def run_cells(script: str, sites: list[Site], namespace: dict) -> None:
    """Run the notebook's code cells in `namespace`, with `sites` probed."""
    path = os.path.abspath(script)
    cells, view = _cells(path)
    _remember_rows(path, "".join(cell.source + "\n" for cell in cells))
    namespace.pop("__file__", None)  # a kernel's namespace has none
    namespace["display"] = _display
    for cell, masked, first_row in zip(cells, view.cells, view.first_rows):
        for row, text in _notes(masked):
            _note(script, cell.number, f", row {row}", text)
        if not masked.runs_as_python:
            continue
        try:
            code, _ = compile_probed("\n" * (first_row - 1) + _runnable(masked), path, sites)
            exec(code, namespace)
        except BaseException as error:
            if not isinstance(error, SystemExit):
                _note(script, cell.number, _failed_at(error, path, view), "raised; the cells after it did not run")
            raise
